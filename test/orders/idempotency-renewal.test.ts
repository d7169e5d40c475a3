// An idempotency claim's lease is renewed for as long as its request runs, not once: a request that runs for
// many renewal periods (and many leases) keeps its claim, and every duplicate meanwhile gets 409
// IDEMPOTENCY_KEY_IN_PROGRESS + Retry-After, never a takeover (a second order). The claim is taken through
// the store a service builds (another instance's request), and held on both databases (the row-lock hold of
// a real request in idempotency-lease.test.ts runs on MariaDB only). Serial: timings matter here.
import test from 'ava';
import { createLogger } from '../../lib/logger';
import { createIdempotencyStore, type HeldClaim } from '../../lib/orders/idempotency';
import { assertError } from '../helpers/assertions';
import { LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { orderBody, placeOrder, productRow, world } from './order-fixtures';

// A lease of 1 s (renewed every 250 ms) is short enough to run out several times over within the test, and long
// enough that a busy machine's delayed timer never lets a live claim lapse.
const LEASE_MS = 1000;
const WAIT_MS = 300;
/** How long the first request "runs": four leases, sixteen renewal periods. */
const HELD_MS = 4 * LEASE_MS;

let app: TestApp;

/**
 * The claims of another instance's requests on this database: the store a service builds, with the same lease
 * (the code that renews is the same; only the process differs).
 */
let store: ReturnType<typeof createIdempotencyStore>;
test.before(async () => {
  app = await startTestApp({
    env: { IDEMPOTENCY_LEASE_MS: String(LEASE_MS), IDEMPOTENCY_WAIT_MS: String(WAIT_MS) },
  });
  store = createIdempotencyStore({
    db: app.db,
    logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
    leaseMs: LEASE_MS,
    waitMs: WAIT_MS,
  });
});
test.after.always(async () => {
  await app?.close();
});

const ordersOf = async (buyerId: number) =>
  Number((await app.db('orders').where('buyer_id', buyerId).count({ n: '*' }).first())!.n);

test.serial(
  'a claim held for four leases keeps being renewed: every duplicate meanwhile is 409 IN_PROGRESS, no takeover, no order',
  async (t) => {
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const items = [{ productId: p, quantity: 1 }];
    const key = `renewed-${p}`;
    const claim = (await store.claim(buyer.id, key, orderBody(items))) as HeldClaim;
    t.is(claim.kind, 'claimed');
    const claimedAt = Date.now();
    try {
      let duplicates = 0;
      while (Date.now() - claimedAt < HELD_MS) {
        const res = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
        duplicates++;
        assertError(t, res, 409, 'IDEMPOTENCY_KEY_IN_PROGRESS', '/api/v1/orders');
        t.is(res.headers.get('retry-after'), '1');
        const row = await app.db('idempotency_keys').where('id', claim.id).first();
        t.is(row.owner_id, claim.owner, 'still the claim of the first request');
        t.is(row.response_status, null);
        t.true(
          new Date(row.lease_until).getTime() > Date.now(),
          `the lease is still running ${Date.now() - claimedAt} ms after the claim`,
        );
      }
      t.true(duplicates >= 8, `${duplicates} duplicates during the hold`);
      t.is(await ordersOf(buyer.id), 0);
      t.deepEqual(await productRow(app, p), { stock: 5, status: 'ON_SALE', salesCount: 0 });
    } finally {
      // The first request fails after all: its claim is freed and a retry places the one order.
      await store.release(claim);
    }
    const retry = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
    t.is(retry.status, 201, retry.text);
    t.like(retry.body.orders[0], { buyerId: buyer.id, status: 'PENDING', totalAmount: 10 });
    t.is(await ordersOf(buyer.id), 1);
    t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
  },
);

test.serial('a claim whose request ended stops being renewed: its lease runs out', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 5 });
  const items = [{ productId: p, quantity: 1 }];
  const claim = (await store.claim(buyer.id, `ended-${p}`, orderBody(items))) as HeldClaim;
  // Held past two renewals, then the request ends without answering (its process stalls, say).
  await new Promise((resolve) => setTimeout(resolve, 3 * (LEASE_MS / 4) + 50));
  claim.end();
  const endedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));
  const row = await app.db('idempotency_keys').where('id', claim.id).first();
  t.is(row.owner_id, claim.owner);
  t.true(new Date(row.lease_until).getTime() <= endedAt + LEASE_MS, 'no renewal after end()');
  t.true(new Date(row.lease_until).getTime() < Date.now(), 'the lease ran out');
});
