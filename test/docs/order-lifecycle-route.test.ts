// GET /api/v1/orders/:orderId/lifecycle: the order's diagram with its current status and the path it took
// highlighted, readable exactly by those who may read the order; and the order endpoints' real responses
// conform to the OpenAPI document.
import test from 'ava';
import { ORDER_STATUSES } from '../../actors/order-lifecycle-machine';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { loadConformance, type Conformance } from './openapi-conformance';

let app: TestApp;
let api: Conformance;
let seller: TestMember;
let otherSeller: TestMember;
let buyer: TestMember;
let otherBuyer: TestMember;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  api = await loadConformance(app);
  [seller, otherSeller, buyer, otherBuyer, admin] = await Promise.all([
    createMember(app, 'SELLER'),
    createMember(app, 'SELLER'),
    createMember(app, 'BUYER'),
    createMember(app, 'BUYER'),
    createMember(app, 'ADMIN'),
  ]);
});
test.after.always(async () => {
  await app?.close();
});

const ADDRESS = {
  zipCode: '06236',
  address: '123 Teheran-ro',
  addressDetail: 'Suite 4',
  receiverName: 'Kim Buyer',
  receiverPhone: '010-1234-5678',
};
const LIFECYCLE = '/api/v1/orders/{orderId}/lifecycle';

async function placeOrder(): Promise<{ id: number; orderNumber: string }> {
  const productId = await createProduct(app, seller.id, { stockQuantity: 10, price: '12.50' });
  const res = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 2 }], shippingAddress: ADDRESS },
  });
  if (res.status !== 201) throw new Error(`order not placed: ${res.status} ${res.text}`);
  api.covered.add('POST /api/v1/orders');
  return res.body.orders[0];
}

async function moveTo(orderId: number, status: string): Promise<ApiResponse> {
  return app.request('PATCH', `/api/v1/sellers/orders/${orderId}/status`, { token: seller.token, body: { status } });
}

function stateClasses(svg: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of svg.matchAll(/<g id="state&#45;(\w+)" class="node (state[^"]*)">/g)) out[m[1]] = m[2];
  return out;
}

function takenTransitions(svg: string): string[] {
  return [...svg.matchAll(/<g id="transition&#45;([\w&#;]+)" class="edge [^"]*\btaken\b[^"]*">/g)]
    .map((m) => m[1].replace(/&#45;/g, '-'))
    .sort();
}

test('a shipped order: SHIPPED is current, PENDING and CONFIRMED visited, the path taken highlighted', async (t) => {
  const order = await placeOrder();
  t.is((await moveTo(order.id, 'CONFIRMED')).status, 200);
  t.is((await moveTo(order.id, 'SHIPPED')).status, 200);

  const res = await app.request('GET', `/api/v1/orders/${order.id}/lifecycle`, { token: buyer.token });
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
  api.check(t, 'get', LIFECYCLE, res);
  const svg = res.text;
  t.true(svg.includes('<svg'));
  t.deepEqual(stateClasses(svg), {
    PENDING: 'state visited',
    CONFIRMED: 'state visited',
    SHIPPED: 'state current',
    DELIVERED: 'state final',
    CANCELLED: 'state final',
  });
  t.deepEqual(takenTransitions(svg), ['CONFIRMED-SHIP-SHIPPED', 'PENDING-CONFIRM-CONFIRMED', 'start']);
  t.true(svg.includes(`Order ${order.orderNumber.replace(/-/g, '&#45;')}: SHIPPED`));
  t.is(Object.keys(stateClasses(svg)).length, ORDER_STATUSES.length);
});

test('a cancelled order: CANCELLED is current, reached by the buyer\'s CANCEL from PENDING', async (t) => {
  const order = await placeOrder();
  const cancel = await app.request('POST', `/api/v1/orders/${order.id}/cancel`, { token: buyer.token });
  t.is(cancel.status, 200);
  api.check(t, 'post', '/api/v1/orders/{orderId}/cancel', cancel);

  const res = await app.request('GET', `/api/v1/orders/${order.id}/lifecycle`, { token: seller.token });
  t.is(res.status, 200);
  const classes = stateClasses(res.text);
  t.is(classes.CANCELLED, 'state current final');
  t.is(classes.PENDING, 'state visited');
  t.is(classes.CONFIRMED, 'state');
  t.deepEqual(takenTransitions(res.text), ['PENDING-CANCEL-CANCELLED', 'start']);
});

test("an expired order: CANCELLED is current, reached by the system's EXPIRE from PENDING (not the buyer's CANCEL)", async (t) => {
  const order = await placeOrder();
  // Older than anything else in this file's database, and expired with a ten-year limit: only this order is due.
  const tenYears = 10 * 365 * 86_400;
  await app.db('orders').where('id', order.id).update({ ordered_at: new Date(Date.now() - (tenYears + 60) * 1000) });
  t.deepEqual(await app.bundle.services.orders.expirePending(new Date(), tenYears, 100), {
    expired: [order.id],
    failed: [],
  });

  const res = await app.request('GET', `/api/v1/orders/${order.id}/lifecycle`, { token: buyer.token });
  t.is(res.status, 200);
  api.check(t, 'get', LIFECYCLE, res);
  const classes = stateClasses(res.text);
  t.is(classes.CANCELLED, 'state current final');
  t.is(classes.PENDING, 'state visited');
  t.deepEqual(takenTransitions(res.text), ['PENDING-EXPIRE-CANCELLED', 'start']);
});

test('the same access as reading the order: buyer, seller with items and admin yes; others 403; 401, 404, 400', async (t) => {
  const order = await placeOrder();
  const path = `/api/v1/orders/${order.id}/lifecycle`;
  for (const who of [buyer, seller, admin]) {
    const res = await app.request('GET', path, { token: who.token });
    t.is(res.status, 200, who.role);
    t.deepEqual(stateClasses(res.text).PENDING, 'state current');
  }
  for (const who of [otherBuyer, otherSeller]) {
    const lifecycle = await app.request('GET', path, { token: who.token });
    const read = await app.request('GET', `/api/v1/orders/${order.id}`, { token: who.token });
    t.is(lifecycle.status, 403, who.role);
    t.is(read.status, 403, who.role);
    t.is(lifecycle.body.code, 'FORBIDDEN');
    api.check(t, 'get', LIFECYCLE, lifecycle);
  }
  const anonymous = await app.request('GET', path);
  t.is(anonymous.status, 401);
  t.is(anonymous.body.code, 'UNAUTHENTICATED');
  api.check(t, 'get', LIFECYCLE, anonymous);
  const unknown = await app.request('GET', '/api/v1/orders/2147483000/lifecycle', { token: admin.token });
  t.is(unknown.status, 404);
  t.is(unknown.body.code, 'NOT_FOUND');
  api.check(t, 'get', LIFECYCLE, unknown);
  const bad = await app.request('GET', '/api/v1/orders/abc/lifecycle', { token: admin.token });
  t.is(bad.status, 400);
  t.is(bad.body.code, 'VALIDATION_ERROR');
  api.check(t, 'get', LIFECYCLE, bad);
});

test('the order endpoints answer what the OpenAPI document says', async (t) => {
  const productId = await createProduct(app, seller.id, { stockQuantity: 1 });
  const created = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: ADDRESS },
  });
  t.is(created.status, 201);
  api.check(t, 'post', '/api/v1/orders', created);
  const orderId = created.body.orders[0].id as number;

  const short = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: ADDRESS },
  });
  t.is(short.status, 409);
  t.is(short.body.code, 'INSUFFICIENT_STOCK');
  api.check(t, 'post', '/api/v1/orders', short);

  const invalid = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 0 }], shippingAddress: ADDRESS },
  });
  t.is(invalid.status, 400);
  api.check(t, 'post', '/api/v1/orders', invalid);

  const one = await app.request('GET', `/api/v1/orders/${orderId}`, { token: buyer.token });
  t.is(one.status, 200);
  t.is(one.body.status, 'PENDING');
  api.check(t, 'get', '/api/v1/orders/{orderId}', one);

  const mine = await app.request('GET', '/api/v1/orders?size=5', { token: buyer.token });
  t.is(mine.status, 200);
  t.true(mine.body.content.length > 0);
  api.check(t, 'get', '/api/v1/orders', mine);

  const sellers = await app.request('GET', '/api/v1/sellers/orders?status=PENDING', { token: seller.token });
  t.is(sellers.status, 200);
  api.check(t, 'get', '/api/v1/sellers/orders', sellers);

  const skip = await moveTo(orderId, 'SHIPPED');
  t.is(skip.status, 409);
  t.is(skip.body.code, 'INVALID_STATUS_TRANSITION');
  api.check(t, 'patch', '/api/v1/sellers/orders/{orderId}/status', skip);
  const confirm = await moveTo(orderId, 'CONFIRMED');
  t.is(confirm.status, 200);
  t.is(confirm.body.status, 'CONFIRMED');
  api.check(t, 'patch', '/api/v1/sellers/orders/{orderId}/status', confirm);

  const notifications = await app.request('GET', '/api/v1/notifications', { token: seller.token });
  t.is(notifications.status, 200);
  api.check(t, 'get', '/api/v1/notifications', notifications);
});
