// Operator caps on a buyer (issue 15): ORDER_MAX_PENDING_PER_BUYER and ORDER_MAX_UNITS_PER_PRODUCT, off by
// default. Each refuses at its limit with 409 ORDER_LIMIT_EXCEEDED naming it (nothing written, no stock taken)
// and allows below it; the unit cap holds under 20 parallel orders of one buyer in both inventory modes and
// over two instances on one database.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct } from '../helpers/factories';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from '../helpers/harness';
import { placeOrder, productRow, world } from './order-fixtures';

let database: TestDatabase;
const apps: TestApp[] = [];
let unitsActor: TestApp;
let unitsActorTwin: TestApp;
let unitsTransactional: TestApp;
let pending: TestApp;
let uncapped: TestApp;

test.before(async () => {
  database = await createTestDatabase();
  // One database, apps started one after the other (each migrates on start).
  const start = async (env: Record<string, string>) => {
    const app = await startTestApp({ database, env });
    apps.push(app);
    return app;
  };
  unitsActor = await start({ ORDER_MAX_UNITS_PER_PRODUCT: '5' });
  unitsActorTwin = await start({ ORDER_MAX_UNITS_PER_PRODUCT: '5' });
  unitsTransactional = await start({ ORDER_MAX_UNITS_PER_PRODUCT: '5', INVENTORY_MODE: 'transactional' });
  pending = await start({ ORDER_MAX_PENDING_PER_BUYER: '2' });
  uncapped = await start({});
});
test.after.always(async () => {
  for (const app of apps) await app.close();
  await database?.drop();
});

const ordersOf = async (app: TestApp, buyerId: number) =>
  Number((await app.db('orders').where('buyer_id', buyerId).count({ n: '*' }).first())!.n);

const patchStatus = (app: TestApp, token: string, orderId: number, status: string) =>
  app.request('PATCH', `/api/v1/sellers/orders/${orderId}/status`, { token, body: { status } });

test("unset: no caps, a buyer may hold API.md's limits (many pending orders, 1000 units of one product twice)", async (t) => {
  t.deepEqual(uncapped.config.orderPolicies, {
    maxPendingPerBuyer: null,
    maxUnitsPerProduct: null,
    pendingExpiry: null,
  });
  const { buyer, product } = await world(uncapped);
  const productId = await product({ stockQuantity: 3000 });
  for (let i = 0; i < 4; i++)
    t.is((await placeOrder(uncapped, buyer.token, [{ productId, quantity: 1 }])).status, 201);
  for (let i = 0; i < 2; i++) {
    const res = await placeOrder(uncapped, buyer.token, [{ productId, quantity: 1000 }]);
    t.is(res.status, 201);
    t.like(res.body.orders[0], { status: 'PENDING', items: [{ productId, quantity: 1000 }] });
  }
  t.is(await ordersOf(uncapped, buyer.id), 6);
  t.is((await productRow(uncapped, productId)).stock, 3000 - 4 - 2000);
});

test('pending cap 2: two PENDING orders, the third is 409 naming the limit; a confirmed or cancelled one frees a place', async (t) => {
  const { buyer, seller, product } = await world(pending);
  const productId = await product({ stockQuantity: 50 });
  const first = await placeOrder(pending, buyer.token, [{ productId, quantity: 1 }]);
  t.is(first.status, 201);
  t.is((await placeOrder(pending, buyer.token, [{ productId, quantity: 1 }])).status, 201);
  const refused = await placeOrder(pending, buyer.token, [{ productId, quantity: 1 }]);
  assertError(t, refused, 409, 'ORDER_LIMIT_EXCEEDED', '/api/v1/orders');
  t.is(
    refused.body.message,
    'A buyer may have at most 2 pending orders at once (you have 2); wait for confirmation or cancel one',
  );
  t.is(await ordersOf(pending, buyer.id), 2);
  t.deepEqual(await productRow(pending, productId), { stock: 48, status: 'ON_SALE', salesCount: 2 });
  // Another buyer has a cap of their own.
  const other = await createMember(pending, 'BUYER');
  t.is((await placeOrder(pending, other.token, [{ productId, quantity: 1 }])).status, 201);
  // The seller confirms one: it is no longer pending, so one more fits.
  t.is((await patchStatus(pending, seller.token, first.body.orders[0].id, 'CONFIRMED')).status, 200);
  const third = await placeOrder(pending, buyer.token, [{ productId, quantity: 1 }]);
  t.is(third.status, 201);
  t.like(third.body.orders[0], { buyerId: buyer.id, status: 'PENDING' });
  assertError(
    t,
    await placeOrder(pending, buyer.token, [{ productId, quantity: 1 }]),
    409,
    'ORDER_LIMIT_EXCEEDED',
  );
  const cancelled = await pending.request('POST', `/api/v1/orders/${third.body.orders[0].id}/cancel`, {
    token: buyer.token,
  });
  t.is(cancelled.status, 200);
  t.is((await placeOrder(pending, buyer.token, [{ productId, quantity: 1 }])).status, 201);
});

test('pending cap 2: a cart over three sellers (three orders) is refused on its own', async (t) => {
  const buyer = await createMember(pending, 'BUYER');
  const ids: number[] = [];
  for (let i = 0; i < 3; i++)
    ids.push(await createProduct(pending, (await createMember(pending, 'SELLER')).id));
  const res = await placeOrder(
    pending,
    buyer.token,
    ids.map((productId) => ({ productId, quantity: 1 })),
  );
  assertError(t, res, 409, 'ORDER_LIMIT_EXCEEDED', '/api/v1/orders');
  t.regex(res.body.message, /at most 2 pending orders/);
  t.is(await ordersOf(pending, buyer.id), 0);
  for (const id of ids) t.is((await productRow(pending, id)).salesCount, 0);
  // Two sellers fit.
  const two = await placeOrder(
    pending,
    buyer.token,
    ids.slice(0, 2).map((productId) => ({ productId, quantity: 1 })),
  );
  t.is(two.status, 201);
  t.is(two.body.orders.length, 2);
});

for (const [mode, app] of [
  ['actor', () => unitsActor],
  ['transactional', () => unitsTransactional],
] as const) {
  test(`${mode}: unit cap 5 counts PENDING and CONFIRMED orders of one product; cancelled and other products do not`, async (t) => {
    const { buyer, seller, product } = await world(app());
    const productId = await product({ stockQuantity: 100 });
    const otherProduct = await product({ stockQuantity: 100 });
    const three = await placeOrder(app(), buyer.token, [{ productId, quantity: 3 }]);
    t.is(three.status, 201);
    t.is((await patchStatus(app(), seller.token, three.body.orders[0].id, 'CONFIRMED')).status, 200);
    const refused = await placeOrder(app(), buyer.token, [
      { productId: otherProduct, quantity: 1 },
      { productId, quantity: 3 },
    ]);
    assertError(t, refused, 409, 'ORDER_LIMIT_EXCEEDED', '/api/v1/orders');
    t.is(
      refused.body.message,
      `A buyer may hold at most 5 units of product ${productId} in open (PENDING or CONFIRMED) orders (you hold 3, this order asks 3)`,
    );
    t.is(await ordersOf(app(), buyer.id), 1);
    t.deepEqual(await productRow(app(), productId), { stock: 97, status: 'ON_SALE', salesCount: 3 });
    t.deepEqual(await productRow(app(), otherProduct), { stock: 100, status: 'ON_SALE', salesCount: 0 });
    // Up to the cap is fine; the other product has its own 5.
    const two = await placeOrder(app(), buyer.token, [
      { productId, quantity: 2 },
      { productId: otherProduct, quantity: 5 },
    ]);
    t.is(two.status, 201);
    assertError(
      t,
      await placeOrder(app(), buyer.token, [{ productId, quantity: 1 }]),
      409,
      'ORDER_LIMIT_EXCEEDED',
    );
    // A cancellation gives the units back to the cap too.
    const cancel = await app().request('POST', `/api/v1/orders/${three.body.orders[0].id}/cancel`, {
      token: buyer.token,
    });
    t.is(cancel.status, 200);
    t.is((await placeOrder(app(), buyer.token, [{ productId, quantity: 3 }])).status, 201);
    // More than the cap in one line is refused before anything is reserved.
    const buyer2 = await createMember(app(), 'BUYER');
    const alone = await placeOrder(app(), buyer2.token, [{ productId, quantity: 6 }]);
    assertError(t, alone, 409, 'ORDER_LIMIT_EXCEEDED');
    t.regex(alone.body.message, /you hold 0, this order asks 6/);
  });

  test(`${mode}: 20 parallel orders of one buyer for one product, cap 5 units → exactly 5 placed, stock taken 5`, async (t) => {
    const { buyer, product } = await world(app());
    const productId = await product({ stockQuantity: 100 });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => placeOrder(app(), buyer.token, [{ productId, quantity: 1 }])),
    );
    const placed = results.filter((res) => res.status === 201);
    const refused = results.filter((res) => res.status !== 201);
    t.is(placed.length, 5);
    for (const res of refused) {
      assertError(t, res, 409, 'ORDER_LIMIT_EXCEEDED', '/api/v1/orders');
      t.regex(res.body.message, new RegExp(`at most 5 units of product ${productId} `));
    }
    t.is(await ordersOf(app(), buyer.id), 5);
    t.deepEqual(await productRow(app(), productId), { stock: 95, status: 'ON_SALE', salesCount: 5 });
  });
}

test('two instances on one database: 20 parallel orders of one buyer split over both, cap 5 → exactly 5', async (t) => {
  const { buyer, product } = await world(unitsActor);
  const productId = await product({ stockQuantity: 100 });
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      placeOrder(i % 2 ? unitsActor : unitsActorTwin, buyer.token, [{ productId, quantity: 1 }]),
    ),
  );
  const statuses = results.map((res) => res.status).sort();
  t.deepEqual(statuses, [...Array(5).fill(201), ...Array(15).fill(409)]);
  for (const res of results.filter((r) => r.status === 409)) t.is(res.body.code, 'ORDER_LIMIT_EXCEEDED');
  t.is(await ordersOf(unitsActor, buyer.id), 5);
  t.deepEqual(await productRow(unitsActor, productId), { stock: 95, status: 'ON_SALE', salesCount: 5 });
});
