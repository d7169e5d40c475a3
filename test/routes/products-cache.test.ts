// The cached product detail never outlives a client's own write: a real order taking stock, and a seller
// turning an ON_SALE product into a DRAFT after an anonymous read filled the public cache entry.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let buyer: TestMember;
let categoryId: number;
test.before(async () => {
  app = await startTestApp();
  [seller, buyer] = await Promise.all([createMember(app, 'SELLER'), createMember(app, 'BUYER')]);
  categoryId = await createCategory(app);
});
test.after.always(async () => {
  await app?.close();
});

const shippingAddress = {
  zipCode: '04524',
  address: '1 Market Street',
  addressDetail: 'Unit 2',
  receiverName: 'Test Buyer',
  receiverPhone: '010-0000-0000',
};

test('a real order (POST /orders) drops the cached detail: stockQuantity is down by 2 on the very next GET', async (t) => {
  const productId = await createProduct(app, seller.id, { categoryId, stockQuantity: 7, price: '12.50' });
  const before = await app.request('GET', `/api/v1/products/${productId}`);
  t.is(before.status, 200);
  t.like(before.body, { id: productId, stockQuantity: 7, status: 'ON_SALE', salesCount: 0 });
  const etag = before.headers.get('etag')!;

  const order = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 2 }], shippingAddress },
  });
  t.is(order.status, 201, JSON.stringify(order.body));

  const after = await app.request('GET', `/api/v1/products/${productId}`, {
    headers: { 'If-None-Match': etag },
  });
  t.is(after.status, 200, 'the old ETag no longer matches');
  t.like(after.body, { id: productId, stockQuantity: 5, status: 'ON_SALE' });
  t.not(after.headers.get('etag'), etag);
  t.is(after.headers.get('cache-control'), 'public, no-cache');
});

test('an anonymous read fills the public entry; the seller PATCHes it to DRAFT; the next anonymous GET is 404', async (t) => {
  const productId = await createProduct(app, seller.id, { categoryId });
  const publicRead = await app.request('GET', `/api/v1/products/${productId}`);
  t.is(publicRead.status, 200);
  t.like(publicRead.body, { id: productId, status: 'ON_SALE' });
  t.is(publicRead.headers.get('cache-control'), 'public, no-cache');

  const patched = await app.request('PATCH', `/api/v1/products/${productId}`, {
    body: { status: 'DRAFT' },
    token: seller.token,
  });
  t.is(patched.status, 200);
  t.is(patched.body.status, 'DRAFT');

  const anonymous = await app.request('GET', `/api/v1/products/${productId}`, {
    headers: { 'If-None-Match': publicRead.headers.get('etag')! },
  });
  t.is(anonymous.status, 404);
  t.like(anonymous.body, { status: 404, code: 'NOT_FOUND', path: `/api/v1/products/${productId}` });
  const own = await app.request('GET', `/api/v1/products/${productId}`, { token: seller.token });
  t.is(own.status, 200);
  t.is(own.body.status, 'DRAFT');
  t.is(own.headers.get('cache-control'), 'private, no-store');
});
