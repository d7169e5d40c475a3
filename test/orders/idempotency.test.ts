// Idempotency-Key edge cases: an expired key (24 h) is a new request; a claim left without a response by
// a crashed process is taken over (see idempotency-lease.test.ts for leases); the stored response is replayed even after the order changed.
import test from 'ava';
import { requestHash } from '../../lib/orders/idempotency';
import { startTestApp, type TestApp } from '../helpers/harness';
import { orderBody, placeOrder, productRow, world } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test('the request hash ignores key order but not values', (t) => {
  t.is(requestHash({ a: 1, b: { c: 2, d: 3 } }), requestHash({ b: { d: 3, c: 2 }, a: 1 }));
  t.not(requestHash({ a: 1 }), requestHash({ a: 2 }));
});

test('a key older than 24 h is forgotten: the same key places a new order', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 10 });
  const headers = { 'Idempotency-Key': `old-${p}` };
  const first = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], headers);
  t.is(first.status, 201);
  await app
    .db('idempotency_keys')
    .where({ buyer_id: buyer.id, idem_key: `old-${p}` })
    .update({ expires_at: new Date(Date.now() - 1000) });
  const second = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], headers);
  t.is(second.status, 201);
  t.not(second.body.orders[0].id, first.body.orders[0].id);
  t.is(second.headers.get('idempotent-replayed'), null);
  t.deepEqual(await productRow(app, p), { stock: 8, status: 'ON_SALE', salesCount: 2 });
});

test('a claim left without a response or lease (written before leases existed) is taken over at once', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 10 });
  const body = orderBody([{ productId: p, quantity: 1 }]);
  const old = new Date(Date.now() - 60_000);
  await app.db('idempotency_keys').insert({
    buyer_id: buyer.id,
    idem_key: `stale-${p}`,
    request_hash: requestHash(body),
    response_status: null,
    response_body: null,
    created_at: old,
    expires_at: new Date(old.getTime() + 24 * 3600 * 1000),
  });
  const res = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], {
    'Idempotency-Key': `stale-${p}`,
  });
  t.is(res.status, 201);
  const row = await app
    .db('idempotency_keys')
    .where({ buyer_id: buyer.id, idem_key: `stale-${p}` })
    .first();
  t.is(row.response_status, 201);
  t.deepEqual(JSON.parse(row.response_body), res.body);
});

test('the replay is the first response, even after the order moved on', async (t) => {
  const { buyer, seller, product } = await world(app);
  const p = await product();
  const headers = { 'Idempotency-Key': `moved-${p}` };
  const first = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], headers);
  await app.request('PATCH', `/api/v1/sellers/orders/${first.body.orders[0].id}/status`, {
    token: seller.token,
    body: { status: 'CONFIRMED' },
  });
  const replay = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], headers);
  t.is(replay.status, 201);
  t.deepEqual(replay.body, first.body);
  t.is(replay.body.orders[0].status, 'PENDING');
});
