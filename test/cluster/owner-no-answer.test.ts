// An order forwarded to its product's owner that gets no answer in time (the owner is stuck behind a row lock
// here; a kill -9 mid-commit looks the same to the caller) may still commit: the caller answers 503
// COMMIT_OUTCOME_UNKNOWN with Retry-After, keeps its Idempotency-Key claim, and the retry with the same key
// returns the order the owner committed: exactly one order, stock taken once. The same holds for several
// orders forwarded together (one NATS batch when they meet in one event-loop turn): each gets its own 503 and
// its own exact retry.
import crypto from 'node:crypto';
import test from 'ava';
import knexFactory from 'knex';
import { createTestDatabase, startTestApp, type TestApp } from '../helpers/harness';
import { address } from '../orders/order-fixtures';
import { createMember, createProduct } from '../helpers/factories';
import { destroyClusterBuckets } from '../../lib/cluster/cluster';
import { NATS_URL, natsTest, uniquePrefix, until } from './cluster-fixtures';

const cleanups: Array<() => Promise<void>> = [];
test.after.always(async () => {
  for (const cleanup of cleanups) await cleanup();
});

/**
 * Two instances, "owner" and "caller", on a new database and cluster prefix, each serving its 4 of 8 shards; and
 * the database's URL (for a connection of the test's own).
 */
async function ownerAndCaller(
  name: string,
): Promise<{ owner: TestApp; caller: TestApp; databaseUrl: string }> {
  const database = await createTestDatabase();
  const prefix = uniquePrefix(name);
  const env = {
    NATS_URL,
    CLUSTER_PREFIX: prefix,
    CLUSTER_SHARDS: '8',
    CLUSTER_REQUEST_TIMEOUT_MS: '1000',
    DB_STATEMENT_TIMEOUT_MS: '10000',
  };
  const apps: TestApp[] = [];
  cleanups.push(async () => {
    await Promise.allSettled(apps.map((app) => app.close()));
    await destroyClusterBuckets(NATS_URL, prefix);
    await database.drop();
  });
  apps.push(await startTestApp({ database, env: { ...env, CLUSTER_INSTANCE_ID: 'owner' } }));
  apps.push(await startTestApp({ database, env: { ...env, CLUSTER_INSTANCE_ID: 'caller' } }));
  await until(
    () => apps.every((app) => app.bundle.services.cluster!.ownedShards().length === 4),
    5000,
    () => apps.map((app) => app.bundle.services.cluster!.ownedShards().length).join(' / '),
  );
  return { owner: apps[0], caller: apps[1], databaseUrl: database.env.DATABASE_URL };
}

natsTest(
  'a forwarded order whose owner does not answer in time is exact on retry with its key',
  async (t) => {
    const { owner, caller, databaseUrl } = await ownerAndCaller('noanswer');
    const seller = await createMember(owner, 'SELLER');
    const buyer = await createMember(owner, 'BUYER');
    let productId: number;
    do productId = await createProduct(owner, seller.id, { stockQuantity: 10, price: '10.00' });
    while (!owner.bundle.services.cluster!.isOwner(productId));

    const key = crypto.randomUUID();
    const place = () =>
      caller.request('POST', '/api/v1/orders', {
        token: buyer.token,
        headers: { 'Idempotency-Key': key },
        body: { orderItems: [{ productId, quantity: 3 }], shippingAddress: address },
      });

    // Hold the product's row: the owner's group commit waits for it, longer than the caller waits for the owner.
    const blocker = knexFactory({ client: 'mysql2', connection: databaseUrl });
    try {
      const trx = await blocker.transaction();
      await trx('products').where('id', productId).forUpdate().first();
      const first = await place();
      t.is(first.status, 503, first.text);
      t.like(first.body, {
        code: 'COMMIT_OUTCOME_UNKNOWN',
        message:
          "The instance that owns the order's first product did not answer in time; retry with the same Idempotency-Key to learn the outcome",
      });
      t.truthy(first.headers.get('retry-after'));
      await trx.commit();
    } finally {
      await blocker.destroy();
    }

    // The owner goes on and commits; the retry learns that outcome (after waiting out the claim if need be).
    let retry = await place();
    const started = Date.now();
    while (retry.status !== 201 && Date.now() - started < 15_000) {
      t.true([409, 503].includes(retry.status), retry.text);
      await new Promise((resolve) => setTimeout(resolve, 250));
      retry = await place();
    }
    t.is(retry.status, 201, retry.text);
    t.like(retry.body.orders[0].items[0], { productId, quantity: 3 });
    const orders = await owner.db('order_items').where('product_id', productId).select('order_id');
    t.is(orders.length, 1);
    t.is(orders[0].order_id, retry.body.orders[0].id);
    const row = await owner.db('products').where('id', productId).first('stock_quantity');
    t.is(row.stock_quantity, 7);
  },
);

natsTest(
  'several forwarded orders whose owner does not answer: each is a 503 COMMIT_OUTCOME_UNKNOWN and exact on retry with its own key',
  async (t) => {
    const { owner, caller, databaseUrl } = await ownerAndCaller('noanswer-batch');
    const seller = await createMember(owner, 'SELLER');
    const buyers = await Promise.all([0, 1, 2].map(() => createMember(owner, 'BUYER')));
    let productId: number;
    do productId = await createProduct(owner, seller.id, { stockQuantity: 10, price: '10.00' });
    while (!owner.bundle.services.cluster!.isOwner(productId));

    const keys = buyers.map(() => crypto.randomUUID());
    const place = (i: number) =>
      caller.request('POST', '/api/v1/orders', {
        token: buyers[i].token,
        headers: { 'Idempotency-Key': keys[i] },
        body: { orderItems: [{ productId, quantity: 2 }], shippingAddress: address },
      });

    const blocker = knexFactory({ client: 'mysql2', connection: databaseUrl });
    try {
      const trx = await blocker.transaction();
      await trx('products').where('id', productId).forUpdate().first();
      const first = await Promise.all([0, 1, 2].map(place));
      for (const res of first) {
        t.is(res.status, 503, res.text);
        t.like(res.body, { status: 503, code: 'COMMIT_OUTCOME_UNKNOWN' });
        t.truthy(res.headers.get('retry-after'));
      }
      await trx.commit();
    } finally {
      await blocker.destroy();
    }

    const placed: number[] = [];
    for (const i of [0, 1, 2]) {
      let retry = await place(i);
      const started = Date.now();
      while (retry.status !== 201 && Date.now() - started < 15_000) {
        t.true([409, 503].includes(retry.status), retry.text);
        await new Promise((resolve) => setTimeout(resolve, 250));
        retry = await place(i);
      }
      t.is(retry.status, 201, retry.text);
      t.like(retry.body.orders[0], { buyerId: buyers[i].id });
      t.like(retry.body.orders[0].items[0], { productId, quantity: 2 });
      placed.push(retry.body.orders[0].id);
    }
    const rows = await owner.db('order_items').where('product_id', productId).select('order_id');
    t.deepEqual(rows.map((row) => row.order_id).sort(), [...placed].sort(), 'one order per key, no more');
    const row = await owner.db('products').where('id', productId).first('stock_quantity', 'sales_count');
    t.is(row.stock_quantity, 4);
    t.is(row.sales_count, 6);
  },
);
