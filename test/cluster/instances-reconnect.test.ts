// A NATS outage under two real server processes (A and B) on a private nats-server (its own port and store:
// the shared one is never stopped). While NATS is down every order is answered at once, 201 or 503 with
// Retry-After (never a 500 or a hang), and reads are served. A changes a product's name, price and category
// and creates a category meanwhile: its announcements are lost (the NATS client drops what it buffered while
// disconnected, and B could not have received them anyway), so B keeps serving its cached copies. When NATS is
// back on the same port, B's reconnect drops every cached copy: within 2 s B serves A's version with A's
// ETags, every shard is owned again, an order on B is charged the new price and orders succeed everywhere.
import crypto from 'node:crypto';
import test from 'ava';
import { assertAcknowledgedExist, assertStockConserved } from '../helpers/books';
import { natsTest, until } from './cluster-fixtures';
import { orderBody, startClusterWorld, type ClusterWorld, type WorldMember } from './instances';
import { startPrivateNats, type PrivateNats } from './private-nats';

const A = 0;
const B = 1;
const SHARDS = 8;
// The defaults, set explicitly: the bounds below follow from them.
const LEASE_TTL_MS = 3000;
const RENEW_MS = 1000;
const REQUEST_TIMEOUT_MS = 5000;
/** The forwarder's Retry-After: about the time a shard takes to find an owner. */
const RETRY_AFTER = String(Math.ceil((LEASE_TTL_MS + RENEW_MS) / 1000));
/** B serves A's changes at the latest this long after NATS accepts connections again. */
const FRESH_MS = 2000;
/** Every shard is owned again (and stayed so for 1 s) at the latest this long after NATS is back. */
const SETTLED_MS = 12_000;

let nats: PrivateNats;
let world: ClusterWorld;
let seller: WorldMember;
let admin: WorldMember;
let buyer: WorldMember;
let oldCategory: number;
/** One product per shard (ids are consecutive in a fresh database); the first is the one A edits. */
let products: number[];
let edited: number;
const initial = new Map<number, number>();
/** Order ids of every 201. */
const acknowledged: number[] = [];
/** What B held before the outage: the ETags of the product's detail, popular and the categories. */
const before = { detail: '', popular: '', categories: '' };
/** An order on B refused while NATS was down, retried after it is back with the same Idempotency-Key. */
let refusedOnB: { key: string; body: unknown } | undefined;
let newCategory: { id: number; name: string };
let backAt = 0;
/** Orders for the edited product answered 201 while NATS was down (before the edit). */
let servedDuringOutage = 0;

const detailPath = () => `/api/v1/products/${edited}`;
const POPULAR = '/api/v1/products/popular?limit=50';
const CATEGORIES = '/api/v1/categories';
const listPath = (categoryId: number) => `/api/v1/products?categoryId=${categoryId}&size=100`;

natsTest('two instances start on a private NATS; B caches the product, popular and categories', async (t) => {
  nats = await startPrivateNats();
  world = await startClusterWorld('reconnect', {
    instances: 2,
    natsUrl: nats.url,
    env: {
      CLUSTER_SHARDS: String(SHARDS),
      CLUSTER_LEASE_TTL_MS: String(LEASE_TTL_MS),
      CLUSTER_RENEW_MS: String(RENEW_MS),
      CLUSTER_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    },
  });
  [seller, admin, buyer] = await Promise.all([
    world.member('SELLER'),
    world.member('ADMIN'),
    world.member('BUYER'),
  ]);
  oldCategory = await world.category();
  products = [];
  for (let n = 0; n < SHARDS; n++)
    products.push(
      await world.product(seller.id, oldCategory, { name: `Kettle ${n}`, price: '12.00', stock: 1000 }),
    );
  for (const id of products) initial.set(id, 1000);
  t.is(new Set(products.map((id) => id % SHARDS)).size, SHARDS, 'one product in every shard');
  edited = products[0];

  // An order on each instance (its actors now hold the product), then the reads B will be asked again.
  for (const i of [A, B]) {
    const res = await world.placeOrder(i, buyer.token, orderBody([{ productId: edited, quantity: 1 }]));
    t.is(res.status, 201, JSON.stringify(res.body));
    t.like(res.body.orders[0].items[0], { productName: 'Kettle 0', productPrice: 12 });
    acknowledged.push(...res.body.orders.map((o: { id: number }) => o.id));
  }
  for (const i of [A, B]) {
    for (const path of [detailPath(), POPULAR, CATEGORIES, listPath(oldCategory)]) {
      const res = await world.request(i, 'GET', path);
      t.is(res.status, 200, `${world.instances[i].name} ${path}`);
    }
  }
  const [detail, popular, categories] = await Promise.all(
    [detailPath(), POPULAR, CATEGORIES].map((path) => world.request(B, 'GET', path)),
  );
  t.like(detail.body, { id: edited, name: 'Kettle 0', price: 12, categoryId: oldCategory });
  t.true(popular.body.some((p: { id: number }) => p.id === edited));
  before.detail = detail.headers.get('etag')!;
  before.popular = popular.headers.get('etag')!;
  before.categories = categories.headers.get('etag')!;
  t.truthy(before.detail && before.popular && before.categories);
});

test.after.always(async () => {
  await world?.close();
  await nats?.close();
});

interface Outcome {
  instance: number;
  productId: number;
  key: string;
  body: unknown;
  ms: number;
  status: number;
  code?: string;
  message?: string;
  retryAfter: string | null;
}

natsTest(
  'while NATS is down every order is answered at once, 201 or 503 with Retry-After (never 500, never a hang), and reads are served',
  async (t) => {
    await nats.stop();
    const awayAt = Date.now();
    const outcomes: Outcome[] = [];
    let last: Outcome[] = [];
    // Rounds of one order per shard on each instance, until a whole round is refused: an owner serves its
    // shards in place until its leases' validity runs out (before the server could let anyone else claim
    // them), and a request for a shard it does not own is refused at once while NATS is away.
    await until(
      async () => {
        last = [];
        for (const instance of [A, B]) {
          for (const productId of products) {
            const key = crypto.randomUUID();
            const body = orderBody([{ productId, quantity: 1 }], 'outage');
            const started = Date.now();
            const res = await world.request(instance, 'POST', '/api/v1/orders', {
              token: buyer.token,
              body,
              headers: { 'Idempotency-Key': key },
            });
            last.push({
              instance,
              productId,
              key,
              body,
              ms: Date.now() - started,
              status: res.status,
              code: res.body.code,
              message: res.body.message,
              retryAfter: res.headers.get('retry-after'),
            });
            if (res.status === 201) acknowledged.push(...res.body.orders.map((o: { id: number }) => o.id));
          }
        }
        outcomes.push(...last);
        return last.every((o) => o.status === 503);
      },
      LEASE_TTL_MS + 4000,
      () => `last round: ${JSON.stringify(last.map((o) => [o.instance, o.productId, o.status, o.message]))}`,
    );
    const count = (status: number) => outcomes.filter((o) => o.status === status).length;
    t.log(
      `${outcomes.length} orders while NATS was down: ${count(201)} x 201 (served in place before the leases ran out), ${count(503)} x 503; every shard refused ${Date.now() - awayAt} ms after NATS went away`,
    );
    const reasons = new Map<string, number>();
    for (const o of outcomes.filter((o) => o.status === 503))
      reasons.set(`${o.code}: ${o.message}`, (reasons.get(`${o.code}: ${o.message}`) ?? 0) + 1);
    for (const [reason, n] of reasons) t.log(`503 x ${n}: ${reason}`);
    t.deepEqual(
      outcomes.filter((o) => o.status !== 201 && o.status !== 503),
      [],
      'every answer is a 201 or a 503 (no 500)',
    );
    for (const o of outcomes) {
      // bounded: a request caught as the connection dropped may wait for its timeout, none longer
      t.true(o.ms < REQUEST_TIMEOUT_MS + 1000, `answered after ${o.ms} ms`);
      if (o.status === 503) {
        t.true(['SERVICE_UNAVAILABLE', 'COMMIT_OUTCOME_UNKNOWN'].includes(o.code!), o.code);
        t.is(o.retryAfter, RETRY_AFTER, 'Retry-After on a 503');
      }
    }
    // Once the leases ran out: refused at once, as the README promises, on both instances.
    for (const o of last) {
      t.like(o, {
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
        message: 'The cluster is unreachable; please retry',
        retryAfter: RETRY_AFTER,
      });
      t.true(o.ms < 1000, `refused after ${o.ms} ms`);
    }
    servedDuringOutage = outcomes.filter((o) => o.status === 201 && o.productId === edited).length;
    refusedOnB = last.find((o) => o.instance === B && o.productId === edited);

    // Reads need no NATS: the cached detail, and a product nobody asked for yet (from the database).
    for (const i of [A, B]) {
      const cached = await world.request(i, 'GET', detailPath());
      t.is(cached.status, 200);
      const uncached = await world.request(i, 'GET', `/api/v1/products/${products[SHARDS - 1]}`);
      t.is(uncached.status, 200);
      t.is(uncached.body.id, products[SHARDS - 1]);
    }
  },
);

natsTest(
  'A edits the product and adds a category while NATS is down; B serves them within 2 s of NATS being back, with A’s ETags',
  async (t) => {
    const name = `Kettles ${crypto.randomBytes(3).toString('hex')}`;
    const created = await world.request(A, 'POST', '/api/v1/admin/categories', {
      token: admin.token,
      body: { name, displayOrder: 1 },
    });
    t.is(created.status, 201);
    newCategory = { id: created.body.id, name };
    const edit = await world.request(A, 'PATCH', detailPath(), {
      token: seller.token,
      body: { name: 'Glazed kettle', price: 15.5, categoryId: newCategory.id },
    });
    t.is(edit.status, 200);
    t.like(edit.body, { id: edited, name: 'Glazed kettle', price: 15.5, categoryId: newCategory.id });

    // A serves its own change; B, cut off, still serves what it cached (the premise of this test: nothing
    // but the reconnect will make it drop these copies).
    const onA = await world.request(A, 'GET', detailPath());
    t.like(onA.body, { name: 'Glazed kettle', price: 15.5 });
    const stale = await world.request(B, 'GET', detailPath());
    t.like(stale.body, { name: 'Kettle 0', price: 12, categoryId: oldCategory });
    t.is(stale.headers.get('etag'), before.detail);
    const staleCategories = await world.request(B, 'GET', CATEGORIES);
    t.is(staleCategories.headers.get('etag'), before.categories);
    t.false(staleCategories.body.some((c: { id: number }) => c.id === newCategory.id));

    await nats.start();
    backAt = Date.now();
    const isNew = (p: { id: number; name: string; price: number }) =>
      p.id === edited && p.name === 'Glazed kettle' && p.price === 15.5;
    let seen = '';
    await until(
      async () => {
        const [detail, popular, categories, oldList, newList] = await Promise.all(
          [detailPath(), POPULAR, CATEGORIES, listPath(oldCategory), listPath(newCategory.id)].map((path) =>
            world.request(B, 'GET', path),
          ),
        );
        seen = JSON.stringify({ detail: detail.body, categories: categories.body.length });
        return (
          detail.status === 200 &&
          isNew(detail.body) &&
          detail.body.categoryId === newCategory.id &&
          popular.body.some(isNew) &&
          categories.body.some((c: { id: number }) => c.id === newCategory.id) &&
          !oldList.body.content.some((p: { id: number }) => p.id === edited) &&
          newList.body.content.some(isNew)
        );
      },
      FRESH_MS,
      () => `B after NATS came back: ${seen}`,
    );
    const freshAfter = Date.now() - backAt;
    t.log(`B served A's changes ${freshAfter} ms after NATS accepted connections again`);
    t.regex(world.instances[B].process!.output(), /Reconnected to NATS/);

    // One representation, one ETag: the detail, popular and the categories as A serves them.
    for (const [path, old] of [
      [detailPath(), before.detail],
      [POPULAR, before.popular],
      [CATEGORIES, before.categories],
    ]) {
      const [onA, onB] = await Promise.all([A, B].map((i) => world.request(i, 'GET', path)));
      t.is(onA.status, 200);
      t.deepEqual(onB.body, onA.body, path);
      t.is(onB.headers.get('etag'), onA.headers.get('etag'), `${path}: B's ETag is A's`);
      t.not(onB.headers.get('etag'), old, `${path}: a new ETag`);
      const revalidated = await world.request(B, 'GET', path, { headers: { 'If-None-Match': old } });
      t.is(revalidated.status, 200, `${path}: the old ETag is no 304 on B`);
      t.deepEqual(revalidated.body, onA.body);
      const current = await world.request(B, 'GET', path, {
        headers: { 'If-None-Match': onA.headers.get('etag')! },
      });
      t.is(current.status, 304, `${path}: A's ETag is B's`);
    }
    const categories = await world.request(B, 'GET', CATEGORIES);
    t.deepEqual(
      categories.body.find((c: { id: number }) => c.id === newCategory.id),
      created.body,
    );
  },
);

natsTest(
  'after the reconnect every shard is owned again, an order on B is charged the new price and orders succeed on every instance',
  async (t) => {
    const owners = await world.settled(SETTLED_MS - (Date.now() - backAt));
    t.log(`every shard owned again (stable for 1 s) ${Date.now() - backAt} ms after NATS came back`);
    t.is(owners.size, SHARDS);
    // (Sorted: ava compares sets in their insertion order, which here is whichever instance owns shard 0.)
    t.deepEqual(
      [...new Set(owners.values())].sort(),
      world.instances.map((instance) => instance.name).sort(),
      'both instances own shards',
    );

    const charged = (res: { status: number; body: any }) => {
      t.is(res.status, 201, JSON.stringify(res.body));
      const [order] = res.body.orders;
      t.like(order.items[0], { productId: edited, productName: 'Glazed kettle', productPrice: 15.5 });
      t.is(order.totalAmount, 15.5 * order.items[0].quantity);
      acknowledged.push(...res.body.orders.map((o: { id: number }) => o.id));
    };
    charged(await world.placeOrder(B, buyer.token, orderBody([{ productId: edited, quantity: 2 }])));
    // The client that got a 503 while NATS was down retries with its key: placed now, at the new price.
    t.truthy(refusedOnB, 'B refused an order for the product while NATS was down');
    charged(await world.placeOrder(B, buyer.token, refusedOnB!.body, refusedOnB!.key));

    // Every instance places an order in every shard, without a single 503 to retry.
    for (const i of [A, B]) {
      for (const productId of products) {
        const res = await world.placeOrder(i, buyer.token, orderBody([{ productId, quantity: 1 }]));
        t.is(
          res.status,
          201,
          `${world.instances[i].name}, product ${productId}: ${JSON.stringify(res.body)}`,
        );
        t.deepEqual(res.retried, []);
        t.is(res.body.orders[0].items[0].productPrice, productId === edited ? 15.5 : 12);
        acknowledged.push(...res.body.orders.map((o: { id: number }) => o.id));
      }
    }

    // The books: stock + ordered units = initial for every product, every 201 in the database.
    await assertStockConserved(t, world.db, initial);
    await assertAcknowledgedExist(t, world.db, acknowledged);
    // The product's order lines: 12.00 before the edit (two before the outage, those served during it),
    // 15.50 for the four placed after it.
    const prices = (
      (await world.db('order_items').where('product_id', edited).select('product_price')) as Array<{
        product_price: string;
      }>
    ).map((row) => Number(row.product_price));
    t.is(prices.filter((price) => price === 15.5).length, 4);
    t.is(prices.filter((price) => price === 12).length, 2 + servedDuringOutage);
    t.is(prices.length, 6 + servedDuringOutage);
  },
);
