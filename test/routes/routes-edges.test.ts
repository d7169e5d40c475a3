// Edges of the route handlers (routes/*.ts) that a mutation hunt found unpinned: the caching headers each
// non-JSON or documentation answer chooses (the order's lifecycle diagram: private, no-cache; Swagger UI's files:
// public for an hour; the OpenAPI document: no-cache), and a documentation asset's name bound (100 characters).
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { address } from '../orders/order-fixtures';

let app: TestApp;
let seller: TestMember;
let buyer: TestMember;
test.before(async () => {
  app = await startTestApp();
  [seller, buyer] = await Promise.all([createMember(app, 'SELLER'), createMember(app, 'BUYER')]);
});
test.after.always(async () => {
  await app?.close();
});

test("an order's lifecycle diagram is SVG, private and revalidated (Cache-Control: private, no-cache)", async (t) => {
  const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
  const placed = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
  });
  t.is(placed.status, 201, placed.text);
  const orderId = placed.body.orders[0].id;
  const res = await app.request('GET', `/api/v1/orders/${orderId}/lifecycle`, { token: buyer.token });
  t.is(res.status, 200, res.text);
  t.is(res.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
  // It shows the order's current status: a shared cache must never keep it, a browser must ask again.
  t.is(res.headers.get('cache-control'), 'private, no-cache');
  t.regex(res.text, /<svg[\s>]/);
});

test("Swagger UI's files may be cached for an hour; an unknown one is 404, an over-long name 400", async (t) => {
  const css = await app.request('GET', '/docs/assets/swagger-ui.css');
  t.is(css.status, 200);
  t.regex(css.headers.get('content-type') ?? '', /^text\/css/);
  t.is(css.headers.get('cache-control'), 'public, max-age=3600');
  t.is(Number(css.headers.get('content-length')), Buffer.byteLength(css.text));

  const missing = await app.request('GET', '/docs/assets/no-such-file.css');
  assertError(t, missing, 404, 'NOT_FOUND', '/docs/assets/no-such-file.css');

  const longest = `${'a'.repeat(96)}.css`; // 100 characters: a name the route accepts (and does not know)
  const atBound = await app.request('GET', `/docs/assets/${longest}`);
  assertError(t, atBound, 404, 'NOT_FOUND', `/docs/assets/${longest}`);
  const tooLong = `${'a'.repeat(97)}.css`;
  const over = await app.request('GET', `/docs/assets/${tooLong}`);
  assertError(t, over, 400, 'VALIDATION_ERROR', `/docs/assets/${tooLong}`);
  t.is(over.body.errors[0].field, 'params.file');
});

test('the OpenAPI document is served with Cache-Control: no-cache', async (t) => {
  const res = await app.request('GET', '/api/v1/openapi.json');
  t.is(res.status, 200);
  t.is(res.body.openapi, '3.1.0');
  t.is(res.headers.get('cache-control'), 'no-cache');
});
