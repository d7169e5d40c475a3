// Edges of the buyer caps (lib/orders/buyer-caps.ts) the other tests leave open. The pending cap counts the
// ORDERS a cart adds (one per seller), not its lines, and refuses exactly past the cap, also when the buyer
// already holds some. And the lock on the buyer's member row is what serialises one buyer's placements across
// instances when they share no product row: parallel orders of one buyer, each for a product of its own, over
// two instances (and in transactional mode, a transaction per request) place exactly the cap.
import test, { type ExecutionContext } from 'ava';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from '../helpers/harness';
import { placeOrder, productRow } from './order-fixtures';

const CAP = 3;

let database: TestDatabase;
const apps: TestApp[] = [];
let capped: TestApp;
let cappedTwin: TestApp;
let cappedTransactional: TestApp;

test.before(async () => {
  database = await createTestDatabase();
  // One database, apps started one after the other (each migrates on start).
  const start = async (env: Record<string, string>) => {
    const app = await startTestApp({ database, env });
    apps.push(app);
    return app;
  };
  capped = await start({ ORDER_MAX_PENDING_PER_BUYER: String(CAP) });
  cappedTwin = await start({ ORDER_MAX_PENDING_PER_BUYER: String(CAP) });
  cappedTransactional = await start({
    ORDER_MAX_PENDING_PER_BUYER: String(CAP),
    INVENTORY_MODE: 'transactional',
  });
});
test.after.always(async () => {
  for (const app of apps) await app.close();
  await database?.drop();
});

const ordersOf = async (buyerId: number) =>
  Number((await capped.db('orders').where('buyer_id', buyerId).count({ n: '*' }).first())!.n);

/** `count` products, each of a seller of its own. */
async function productsOfSellers(count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++)
    ids.push(await createProduct(capped, (await createMember(capped, 'SELLER')).id, { stockQuantity: 50 }));
  return ids;
}

/** A buyer with `held` PENDING orders already. */
async function buyerHolding(held: number): Promise<TestMember> {
  const buyer = await createMember(capped, 'BUYER');
  const [productId] = await productsOfSellers(1);
  for (let i = 0; i < held; i++) {
    const res = await placeOrder(capped, buyer.token, [{ productId, quantity: 1 }]);
    if (res.status !== 201) throw new Error(`setup order answered ${res.status}: ${res.text}`);
  }
  return buyer;
}

test(`pending cap ${CAP}: a cart over ${CAP} sellers fills the cap exactly (${CAP} orders)`, async (t) => {
  const buyer = await buyerHolding(0);
  const ids = await productsOfSellers(CAP);
  const res = await placeOrder(
    capped,
    buyer.token,
    ids.map((productId) => ({ productId, quantity: 1 })),
  );
  t.is(res.status, 201, res.text);
  t.is(res.body.orders.length, CAP);
  for (const order of res.body.orders) t.like(order, { buyerId: buyer.id, status: 'PENDING' });
  t.is(await ordersOf(buyer.id), CAP);
});

test(`pending cap ${CAP}: holding ${CAP - 2}, a cart over two sellers fits; holding ${CAP - 1}, it is refused (it adds two orders)`, async (t) => {
  const fits = await buyerHolding(CAP - 2);
  const [a, b] = await productsOfSellers(2);
  const placed = await placeOrder(capped, fits.token, [
    { productId: a, quantity: 1 },
    { productId: b, quantity: 1 },
  ]);
  t.is(placed.status, 201, placed.text);
  t.is(placed.body.orders.length, 2);
  t.is(await ordersOf(fits.id), CAP);

  const over = await buyerHolding(CAP - 1);
  const refused = await placeOrder(capped, over.token, [
    { productId: a, quantity: 1 },
    { productId: b, quantity: 1 },
  ]);
  assertError(t, refused, 409, 'ORDER_LIMIT_EXCEEDED', '/api/v1/orders');
  t.is(
    refused.body.message,
    `A buyer may have at most ${CAP} pending orders at once (you have ${CAP - 1}); wait for confirmation or cancel one`,
  );
  t.is(await ordersOf(over.id), CAP - 1);
  t.deepEqual(await productRow(capped, a), { stock: 49, status: 'ON_SALE', salesCount: 1 });
  t.deepEqual(await productRow(capped, b), { stock: 49, status: 'ON_SALE', salesCount: 1 });
});

test(`pending cap ${CAP}: holding ${CAP - 1}, a cart of several products of ONE seller is one order and fits`, async (t) => {
  const buyer = await buyerHolding(CAP - 1);
  const seller = await createMember(capped, 'SELLER');
  const ids = [
    await createProduct(capped, seller.id, { stockQuantity: 50 }),
    await createProduct(capped, seller.id, { stockQuantity: 50 }),
    await createProduct(capped, seller.id, { stockQuantity: 50 }),
  ];
  const res = await placeOrder(
    capped,
    buyer.token,
    ids.map((productId) => ({ productId, quantity: 2 })),
  );
  t.is(res.status, 201, res.text);
  t.is(res.body.orders.length, 1);
  t.is(res.body.orders[0].items.length, 3);
  t.is(await ordersOf(buyer.id), CAP);
  // At the cap now: the next one is refused.
  assertError(
    t,
    await placeOrder(capped, buyer.token, [{ productId: ids[0], quantity: 1 }]),
    409,
    'ORDER_LIMIT_EXCEEDED',
    '/api/v1/orders',
  );
});

/** 24 parallel orders of one buyer, each for a product of its own (no product row shared), `route(i)` picks the app. */
async function parallelOrders(t: ExecutionContext, route: (i: number) => TestApp) {
  const buyer = await createMember(capped, 'BUYER');
  const ids = await productsOfSellers(24);
  const results = await Promise.all(
    ids.map((productId, i) => placeOrder(route(i), buyer.token, [{ productId, quantity: 1 }])),
  );
  const placed = results.filter((res) => res.status === 201);
  for (const res of placed) t.like(res.body.orders[0], { buyerId: buyer.id, status: 'PENDING' });
  for (const res of results.filter((r) => r.status !== 201)) {
    assertError(t, res, 409, 'ORDER_LIMIT_EXCEEDED', '/api/v1/orders');
    t.regex(res.body.message, new RegExp(`at most ${CAP} pending orders`));
  }
  t.is(placed.length, CAP, `placed ${placed.length} of 24`);
  t.is(await ordersOf(buyer.id), CAP);
  const sold = (await Promise.all(ids.map((id) => productRow(capped, id)))).filter((row) => row.stock !== 50);
  t.is(sold.length, CAP, 'stock taken only for the placed orders');
}

test.serial(
  `two instances: 24 parallel orders of one buyer for 24 different products, pending cap ${CAP} → exactly ${CAP}`,
  async (t) => {
    for (let round = 0; round < 3; round++) await parallelOrders(t, (i) => (i % 2 ? capped : cappedTwin));
  },
);

test.serial(
  `transactional mode: 24 parallel orders of one buyer for 24 different products, pending cap ${CAP} → exactly ${CAP}`,
  async (t) => {
    for (let round = 0; round < 3; round++) await parallelOrders(t, () => cappedTransactional);
  },
);
