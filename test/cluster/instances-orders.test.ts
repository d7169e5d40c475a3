// Orders through three real server processes on one database and one cluster (6 shards, so each instance
// owns two and every product set below touches all of them): a hot product sold through all instances in
// parallel is never oversold; kill -9 of an owner under order load keeps the books (stock + ordered units =
// initial), loses no acknowledged order, answers the requests caught in the move 503 with Retry-After (never
// a 500), and the survivors serve every product again within 10 s; the killed instance, started again under
// its name, takes shards again and serves orders.
import test, { type ExecutionContext } from 'ava';
import { assertAcknowledgedExist, assertStockConserved } from '../helpers/books';
import type { ApiResponse } from '../helpers/harness';
import { natsTest, until } from './cluster-fixtures';
import { orderBody, startClusterWorld, type ClusterWorld, type WorldMember } from './instances';

const SHARDS = 6;
/** The bound for the survivors to serve a dead owner's products again. */
const SERVED_AGAIN_MS = 10_000;

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

async function sharesSettled(t: ExecutionContext): Promise<Map<number, string>> {
  const owners = await world.settled();
  t.pass(`shards: ${JSON.stringify(Object.fromEntries(owners))}`);
  return owners;
}

interface Outcome {
  instance: number;
  productId: number;
  at: number;
  status?: number;
  code?: string;
  message?: string;
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
    // a connection that died with its process (ECONNRESET, ECONNREFUSED), never a contract violation
    const code = (err as NodeJS.ErrnoException).code;
    if (code) return { instance, productId, at, error: code };
    throw err;
  }
  return {
    instance,
    productId,
    at,
    status: res.status,
    code: res.body?.code,
    message: res.body?.message,
    retryAfter: res.headers.get('retry-after'),
    orderIds: res.status === 201 ? res.body.orders.map((o: { id: number }) => o.id) : undefined,
  };
}

natsTest('a hot product (stock 60) sold through all instances in parallel is never oversold', async (t) => {
  const hot = await world.product(seller.id, categoryId, { stock: 60 });
  // 150 clients at once, round-robin over the instances; a 503 is retried after its Retry-After with the
  // same Idempotency-Key (a client cannot know whether a 503'd order was placed; the key makes that exact)
  const responses = await Promise.all(
    Array.from({ length: 150 }, (_, n) =>
      world.placeOrder(
        n % 3,
        buyers[n % buyers.length].token,
        orderBody([{ productId: hot, quantity: 1 }]),
        `hot-${n}`,
      ),
    ),
  );
  const count = (status: number) => responses.filter((res) => res.status === status).length;
  const retried = responses.flatMap((res) => res.retried);
  t.log(`201: ${count(201)}, 409: ${count(409)}; 503s retried: ${retried.length}`);
  const reasons = new Map<string, number>();
  for (const reason of retried) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  for (const [reason, n] of reasons) t.log(`503 x ${n}: ${reason}`);
  for (const line of world.leaseLosses().slice(0, 10)) t.log(line);

  t.is(count(201), 60, 'exactly 60 orders');
  t.is(count(409), 90, 'the rest refused');
  for (const res of responses.filter((res) => res.status === 409))
    t.like(res.body, { status: 409, code: 'INSUFFICIENT_STOCK', path: '/api/v1/orders' });
  const rows = (await world
    .db('order_items')
    .where('product_id', hot)
    .select('order_id', 'quantity')) as Array<{ order_id: number; quantity: number }>;
  const product = await world
    .db('products')
    .where('id', hot)
    .first('stock_quantity', 'status', 'sales_count');
  t.is(
    rows.reduce((sum, row) => sum + row.quantity, 0),
    60,
    'SUM(order quantities) = 60',
  );
  t.like(product, { stock_quantity: 0, status: 'SOLD_OUT', sales_count: 60 });
  const acknowledged = responses.flatMap((res) =>
    res.status === 201 ? res.body.orders.map((o: { id: number }) => o.id) : [],
  );
  t.deepEqual(
    [...new Set(rows.map((row) => Number(row.order_id)))].sort((a, b) => a - b),
    acknowledged.sort((a: number, b: number) => a - b),
    'the orders in the database are exactly the acknowledged ones',
  );
  // every instance now refuses it
  for (const i of world.running()) {
    const res = await world.placeOrder(i, buyers[0].token, orderBody([{ productId: hot, quantity: 1 }]));
    t.is(res.status, 409);
    t.like(res.body, { status: 409, code: 'INSUFFICIENT_STOCK' });
  }
});

natsTest(
  'kill -9 of an owner under order load: books balance, nothing acknowledged is lost, served again within 10 s',
  async (t) => {
    const victim = 2;
    const owners = await sharesSettled(t);
    const victimShards = [...owners]
      .filter(([, name]) => name === world.instances[victim].name)
      .map(([s]) => s);
    t.true(
      victimShards.length >= 1,
      `${world.instances[victim].name} owns shards ${victimShards.join(', ')}`,
    );

    const outcomes: Outcome[] = [];
    const targets = [0, 1, 2];
    let stop = false;
    let turn = 0;
    let killedAt = Infinity;
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const instance = targets[turn++ % targets.length];
        const productId = spread[(w + i) % spread.length];
        outcomes.push(await order(instance, buyers[w % buyers.length], productId, `kill-${w}-${i}`));
      }
    };
    const load = Promise.all(Array.from({ length: 12 }, (_, w) => worker(w)));
    try {
      await until(
        () => outcomes.filter((o) => o.status === 201).length >= 40,
        30_000,
        () => 'load started',
      );
      // the balancer's health check takes the victim out as it dies
      targets.splice(targets.indexOf(victim), 1);
      killedAt = Date.now();
      await world.kill(victim);

      // every product answered 201 by a survivor, from a request sent after the kill
      const servedAfterKill = () =>
        new Set(outcomes.filter((o) => o.at > killedAt && o.status === 201).map((o) => o.productId));
      const ms = await until(
        () => servedAfterKill().size === spread.length,
        SERVED_AGAIN_MS,
        () => `served again: ${[...servedAfterKill()].join(', ')} of ${spread.join(', ')}`,
      );
      t.log(`every product served by the survivors ${ms} ms after the kill`);
      // a little more load on the new owners
      const settledAt = Date.now();
      await until(
        () => outcomes.filter((o) => o.at > settledAt && o.status === 201).length >= 24,
        10_000,
        () => 'orders after the move',
      );
    } finally {
      stop = true;
      await load;
    }

    const unavailable = outcomes.filter((o) => o.status === 503);
    const lost = outcomes.filter((o) => o.error);
    t.log(
      `${outcomes.length} requests: ${outcomes.filter((o) => o.status === 201).length} x 201, ${unavailable.length} x 503, ${lost.length} cut with the victim`,
    );
    t.deepEqual(
      outcomes.filter((o) => o.status !== undefined && o.status !== 201 && o.status !== 503),
      [],
      'every answer is a 201 or a 503 (no 500, no 409)',
    );
    for (const o of unavailable) {
      // nobody owns the shard yet, or its owner did not answer in time (the order may have committed)
      t.true(['SERVICE_UNAVAILABLE', 'COMMIT_OUTCOME_UNKNOWN'].includes(o.code!), o.code);
      t.true(Number(o.retryAfter) > 0, 'Retry-After on a 503');
    }
    const reasons = new Map<string, number>();
    for (const o of unavailable) {
      const reason = `${o.message} (sent ${o.at < killedAt ? 'before' : 'after'} the kill)`;
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    for (const [reason, n] of reasons) t.log(`503 x ${n}: ${reason}`);
    for (const line of world.leaseLosses().slice(0, 10)) t.log(line);
    t.deepEqual(
      lost.filter((o) => o.instance !== victim),
      [],
      'only requests sent to the killed instance lost their connection',
    );
    await assertStockConserved(t, world.db, initial);
    await assertAcknowledgedExist(
      t,
      world.db,
      outcomes.flatMap((o) => o.orderIds ?? []),
    );
    await sharesSettled(t);
  },
);

natsTest(
  'the killed instance, started again under its name, takes shards again and serves orders',
  async (t) => {
    const back = 2;
    t.is(world.instances[back].process, null);
    await world.restart(back);
    const owners = await sharesSettled(t);
    const its = [...owners].filter(([, name]) => name === world.instances[back].name).map(([s]) => s);
    t.true(its.length >= 1);
    for (const productId of spread) {
      for (const i of world.running()) {
        const res = await world.request(i, 'POST', '/api/v1/orders', {
          token: buyers[0].token,
          body: orderBody([{ productId, quantity: 1 }], `rejoin-${i}`),
        });
        t.is(
          res.status,
          201,
          `product ${productId} (shard ${productId % SHARDS}) via ${world.instances[i].name}`,
        );
        t.like(res.body.orders[0], { status: 'PENDING', buyerId: buyers[0].id });
        t.like(res.body.orders[0].items[0], { productId, quantity: 1 });
      }
    }
    await assertStockConserved(t, world.db, initial);
  },
);
