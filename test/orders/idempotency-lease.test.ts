// Idempotency claims belong to a live owner: a duplicate never takes a claim over while the owner keeps
// its lease, waits a bounded time and gets 409 IDEMPOTENCY_KEY_IN_PROGRESS + Retry-After; a claim whose
// owner is gone (lease run out) is taken over at once. The slow-first case runs on MariaDB, where the
// test can hold the product's row lock so the first request waits inside its transaction. Serial: a
// held group commit delays every order of this process, which would skew the other tests' timings.
import test from 'ava';
import { createLogger } from '../../lib/logger';
import { createIdempotencyStore, requestHash, type HeldClaim } from '../../lib/orders/idempotency';
import { createOrderWriter } from '../../lib/orders/order-writer';
import { DB_KIND, LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { orderBody, placeOrder, productRow, world } from './order-fixtures';

const LEASE_MS = 400;
const WAIT_MS = 300;

let app: TestApp;
test.before(async () => {
  app = await startTestApp({
    env: { IDEMPOTENCY_LEASE_MS: String(LEASE_MS), IDEMPOTENCY_WAIT_MS: String(WAIT_MS) },
  });
});
test.after.always(async () => {
  await app?.close();
});

async function ordersOf(buyerId: number): Promise<number> {
  const row = await app.db('orders').where('buyer_id', buyerId).count({ n: '*' }).first();
  return Number(row!.n);
}

/** A claim row as another instance's running request leaves it. */
async function foreignClaim(buyerId: number, key: string, body: unknown, leaseUntil: Date | null) {
  const now = new Date();
  const [id] = await app.db('idempotency_keys').insert({
    buyer_id: buyerId,
    idem_key: key,
    request_hash: requestHash(body),
    response_status: null,
    response_body: null,
    created_at: now,
    expires_at: new Date(now.getTime() + 24 * 3600 * 1000),
    owner_id: 'another-instance',
    lease_until: leaseUntil,
  });
  return Number(id);
}

test.serial(
  'a claim whose owner keeps its lease alive is never taken over: 409 IDEMPOTENCY_KEY_IN_PROGRESS + Retry-After, no order',
  async (t) => {
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const items = [{ productId: p, quantity: 1 }];
    const key = `alive-${p}`;
    const id = await foreignClaim(buyer.id, key, orderBody(items), new Date(Date.now() + LEASE_MS));
    // The other instance renews its lease, for far longer than the lease itself.
    const renewer = setInterval(() => {
      void app
        .db('idempotency_keys')
        .where('id', id)
        .update({ lease_until: new Date(Date.now() + LEASE_MS) })
        .then(() => undefined);
    }, LEASE_MS / 4);
    try {
      for (let i = 0; i < 4; i++) {
        const started = Date.now();
        const res = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
        t.is(res.status, 409);
        t.like(res.body, { status: 409, code: 'IDEMPOTENCY_KEY_IN_PROGRESS' });
        t.is(res.headers.get('retry-after'), '1');
        t.true(Date.now() - started >= WAIT_MS - 50, 'the duplicate waited for the first result');
      }
    } finally {
      clearInterval(renewer);
    }
    t.is(await ordersOf(buyer.id), 0);
    t.deepEqual(await productRow(app, p), { stock: 5, status: 'ON_SALE', salesCount: 0 });
    const row = await app.db('idempotency_keys').where('id', id).first();
    t.is(row.owner_id, 'another-instance');
    // The document declares that Retry-After (on the 409 only sometimes: the other 409s carry none).
    const doc = (await app.request('GET', '/api/v1/openapi.json')).body;
    t.like(doc.paths['/api/v1/orders'].post.responses['409'].headers['Retry-After'], {
      required: false,
      schema: { type: 'integer', minimum: 1 },
    });
  },
);

test.serial(
  'a crashed owner (its lease ran out) is taken over at once: the retry places exactly one order',
  async (t) => {
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const items = [{ productId: p, quantity: 2 }];
    const key = `crashed-${p}`;
    await foreignClaim(buyer.id, key, orderBody(items), new Date(Date.now() - 1));
    const started = Date.now();
    const res = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
    t.is(res.status, 201);
    t.true(Date.now() - started < 2000, 'answered within 2 s');
    t.is(res.body.orders.length, 1);
    t.like(res.body.orders[0], { buyerId: buyer.id, status: 'PENDING', totalAmount: 20 });
    const replay = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
    t.is(replay.status, 201);
    t.is(replay.headers.get('idempotent-replayed'), 'true');
    t.deepEqual(replay.body, res.body);
    t.is(await ordersOf(buyer.id), 1);
    t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 2 });
  },
);

test.serial(
  'a claim that stops being renewed is taken over by the waiting duplicate within 2 s of the crash',
  async (t) => {
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const items = [{ productId: p, quantity: 1 }];
    const key = `dies-${p}`;
    await foreignClaim(buyer.id, key, orderBody(items), new Date(Date.now() + 150));
    // The owner "crashes" now: nobody renews. The duplicate waits (300 ms) and takes it over after 150 ms.
    const started = Date.now();
    const res = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
    t.is(res.status, 201);
    t.true(Date.now() - started < 2000);
    t.is(await ordersOf(buyer.id), 1);
    const row = await app.db('idempotency_keys').where({ buyer_id: buyer.id, idem_key: key }).first();
    t.not(row.owner_id, 'another-instance');
    t.deepEqual(JSON.parse(row.response_body), res.body);
  },
);

test.serial('an owner whose claim was taken over does not order a second time', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 5 });
  const items = [{ productId: p, quantity: 1 }];
  const key = `fenced-${p}`;
  const first = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
  t.is(first.status, 201);
  // The same request again, but the claim is another instance's now (it took it over and is running):
  // this process's claim is gone, so its write is fenced off.
  await app.db('idempotency_keys').where({ buyer_id: buyer.id, idem_key: key }).delete();
  const services = app.bundle.services;
  const claim = await services.orders.place(buyer.id, orderBody(items), key).then(
    () => 'placed',
    (err: { code?: string }) => err.code,
  );
  t.is(claim, 'placed', 'a freed key is claimed again normally');
  const row = await app.db('idempotency_keys').where({ buyer_id: buyer.id, idem_key: key }).first();
  await app
    .db('idempotency_keys')
    .where('id', row.id)
    .update({ response_status: null, response_body: null, owner_id: 'another-instance' });
  // A placement that still believes it owns the claim (its lease lapsed and it was taken over).
  const { createOrderWriter } = await import('../../lib/orders/order-writer');
  const stale = services.inventory.place(
    {
      items,
      details: {
        buyerId: buyer.id,
        address: orderBody(items).shippingAddress,
        idempotencyKeyId: row.id,
        idempotencyOwner: 'this-process-before-the-takeover',
      },
    },
    createOrderWriter(),
  );
  const err = await t.throwsAsync(stale);
  t.like(err, { status: 409, code: 'IDEMPOTENCY_KEY_IN_PROGRESS' });
  t.is(await ordersOf(buyer.id), 2, 'the two earlier placements only');
  t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 2 });
});

test.serial(
  'MariaDB: a slow first request keeps its claim by its lease; the duplicate gets 409 then the first response, one order',
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass('row locks that hold a request inside its transaction are a MariaDB test');
      return;
    }
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const items = [{ productId: p, quantity: 1 }];
    const key = `slow-${p}`;
    const trx = await app.db.transaction();
    let first: ReturnType<typeof placeOrder> | undefined;
    try {
      await trx('products').where('id', p).forUpdate().first('id');
      first = placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
      // Far longer than the lease: under the old age rule (a short stale window) this was a second order.
      await new Promise((resolve) => setTimeout(resolve, 6 * LEASE_MS));
      const duplicate = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
      t.is(duplicate.status, 409);
      t.like(duplicate.body, { code: 'IDEMPOTENCY_KEY_IN_PROGRESS' });
      t.is(duplicate.headers.get('retry-after'), '1');
    } finally {
      await trx.commit();
    }
    const answered = await first!;
    t.is(answered.status, 201);
    const replay = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
    t.is(replay.status, 201);
    t.is(replay.headers.get('idempotent-replayed'), 'true');
    t.deepEqual(replay.body, answered.body);
    t.is(await ordersOf(buyer.id), 1);
    t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
  },
);

test.serial(
  'two requests of one process: the one that took over a lapsed claim places the only order; the stalled one is fenced off and cannot free it',
  async (t) => {
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const items = [{ productId: p, quantity: 1 }];
    const body = orderBody(items);
    const key = `same-process-${p}`;
    const store = createIdempotencyStore({
      db: app.db,
      logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
      leaseMs: LEASE_MS,
      waitMs: WAIT_MS,
    });
    const stalled = (await store.claim(buyer.id, key, body)) as HeldClaim;
    t.is(stalled.kind, 'claimed');
    // It stalls (no renewals) past its lease; a retry of the same request reaches the same process.
    stalled.end();
    await app
      .db('idempotency_keys')
      .where('id', stalled.id)
      .update({ lease_until: new Date(Date.now() - 1000) });
    const retry = (await store.claim(buyer.id, key, body)) as HeldClaim;
    try {
      t.is(retry.kind, 'claimed');
      t.is(retry.id, stalled.id, 'the same row, taken over');
      t.not(retry.owner, stalled.owner);
      // The stalled request gives up: its release must leave the retry's claim alone.
      await store.release(stalled);
      const row = await app.db('idempotency_keys').where('id', retry.id).first();
      t.is(row?.owner_id, retry.owner);
      // Both reach the group commit in one tick (one batch): only the claim's current owner may write.
      const place = (claim: HeldClaim) =>
        app.bundle.services.inventory.place(
          {
            items,
            details: {
              buyerId: buyer.id,
              address: body.shippingAddress,
              idempotencyKeyId: claim.id,
              idempotencyOwner: claim.owner,
            },
          },
          createOrderWriter(),
        );
      const [fromStalled, fromRetry] = await Promise.allSettled([place(stalled), place(retry)]);
      t.is(fromRetry.status, 'fulfilled');
      t.is(fromStalled.status, 'rejected');
      t.like((fromStalled as PromiseRejectedResult).reason, {
        status: 409,
        code: 'IDEMPOTENCY_KEY_IN_PROGRESS',
      });
      t.is(await ordersOf(buyer.id), 1);
      t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
    } finally {
      retry.end();
    }
  },
);
