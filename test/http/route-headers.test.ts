// The route table's `headers` schema: declared request headers are validated in the pipeline like params,
// query and body (errors named `headers.<Name>`), reach the handler typed, and are documented from the same
// schema. POST /orders declares Idempotency-Key this way.
import test from 'ava';
import { IDEMPOTENCY_KEY_PATTERN } from '../../lib/orders/order-schemas';
import { assertError } from '../helpers/assertions';
import { startTestApp, type TestApp } from '../helpers/harness';
import { orderBody, placeOrder, productRow, world } from '../orders/order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const BAD_KEY = [
  { field: 'headers.Idempotency-Key', message: 'Idempotency-Key must be 1-255 visible ASCII characters' },
];

test('a malformed Idempotency-Key is 400 naming headers.Idempotency-Key, and nothing is reserved', async (t) => {
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 10 });
  for (const key of ['has space', 'x'.repeat(256), 'ünïcode', '']) {
    const res = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], { 'Idempotency-Key': key });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/orders');
    t.is(res.body.message, 'Invalid request headers', key);
    t.deepEqual(res.body.errors, BAD_KEY, key);
  }
  t.is((await productRow(app, productId)).stock, 10);
});

test('the validated key reaches the service: 255 visible characters are accepted and replayed', async (t) => {
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 10 });
  const key = { 'Idempotency-Key': `${productId}-`.padEnd(255, '~') };
  const first = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }], key);
  t.is(first.status, 201);
  t.is(first.headers.get('idempotent-replayed'), null);
  const again = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }], key);
  t.is(again.status, 201);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(again.body, first.body);
  t.is((await productRow(app, productId)).stock, 8);
});

test('a request wrong in body and header reports the body (the body is validated first)', async (t) => {
  const { buyer } = await world(app);
  const res = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { ...orderBody([]), extra: true },
    headers: { 'Idempotency-Key': '' },
  });
  assertError(t, res, 400, 'VALIDATION_ERROR');
  t.is(res.body.message, 'Invalid request body');
  t.deepEqual(res.body.errors.map((e: { field: string }) => e.field).sort(), ['extra', 'orderItems']);
});

test('the OpenAPI document describes the header from the same schema', async (t) => {
  const doc = (await app.request('GET', '/api/v1/openapi.json')).body;
  const parameters = doc.paths['/api/v1/orders'].post.parameters as Array<Record<string, unknown>>;
  const header = parameters.find((p) => p.name === 'Idempotency-Key');
  t.like(header, {
    in: 'header',
    required: false,
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source },
  });
  t.regex(String(header?.description), /^Optional, 1-255 visible ASCII characters/);
  // Undeclared headers are not documented (nor validated).
  t.deepEqual(
    parameters.map((p) => p.name),
    ['Idempotency-Key'],
  );
});
