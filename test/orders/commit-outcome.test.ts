// A connection lost during the COMMIT of an order (MariaDB, through a proxy that cuts exactly the COMMIT):
// the service answers the truth when it can check it (201 with the orders that were committed, or it
// places them again when the COMMIT did not apply), and 503 COMMIT_OUTCOME_UNKNOWN when it cannot; never
// 500. A retry with the same Idempotency-Key then yields exactly one order, and the actor's view of the
// product matches the database either way. A COMMIT that reaches the server only after the client gave up on
// the connection still applies: the check waits for that transaction's end instead of placing the order again.
// A delivery of notifications whose COMMIT is lost is checked the same way, and logged once if it applied.
import test, { type ExecutionContext } from 'ava';
import {
  DB_KIND,
  createTestDatabase,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../helpers/harness';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { actorAgrees } from '../helpers/books';
import { createCategory } from '../helpers/factories';
import { eventually, placeOrder, productRow, world } from './order-fixtures';

const modes = ['actor', 'transactional'] as const;
const apps = new Map<string, TestApp>();
let proxy: TcpProxy | undefined;

/**
 * Cuts the next COMMIT of a transaction that inserted orders (not the Idempotency-Key claim's): `applied`
 * forwards it and loses the answer, `lost` never forwards it.
 */
const armCut = (mode: 'applied' | 'lost', blackoutMs = 0) =>
  proxy!.cutOn('COMMIT', { forward: mode === 'applied', after: 'insert into `orders`', blackoutMs });
let database: TestDatabase | undefined;

test.before(async () => {
  if (DB_KIND !== 'mysql') return;
  database = await createTestDatabase('mysql');
  const url = new URL(database.env.DATABASE_URL);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 3306) });
  url.port = String(proxy.port);
  for (const mode of modes) {
    apps.set(
      mode,
      await startTestApp({
        database,
        env: { DATABASE_URL: url.toString(), INVENTORY_MODE: mode, IDEMPOTENCY_LEASE_MS: '1000' },
      }),
    );
  }
});
test.after.always(async () => {
  for (const app of apps.values()) await app.close();
  await proxy?.close();
  await database?.drop();
});

async function ordersOf(app: TestApp, buyerId: number): Promise<number> {
  const row = await app.db('orders').where('buyer_id', buyerId).count({ n: '*' }).first();
  return Number(row!.n);
}

/** An app of its own behind the proxy, whose client gives up on a query after 2 s (statement 1 s + 1 s grace). */
const impatientApp = (mode: (typeof modes)[number]) =>
  startTestApp({
    database,
    logLevel: 'warn',
    env: {
      DATABASE_URL: proxy!.urlFor(database!.env.DATABASE_URL),
      INVENTORY_MODE: mode,
      DB_STATEMENT_TIMEOUT_MS: '1000',
    },
  });

/**
 * Runs `work` on an impatient app of its own; `silence()` arms the trap: the next packet containing `text` (after
 * `after`) and everything after it on that connection is dropped both ways and nothing is closed, so the server keeps
 * the transaction open, with its row locks, until its wait_timeout (hours), unless the service ends that connection
 * on the server, which the log must then say. The proxy passes again and the app closes afterwards.
 */
async function onHalfOpen(
  t: ExecutionContext,
  mode: (typeof modes)[number],
  trap: { text: string; after?: string },
  work: (app: TestApp, silence: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const app = await impatientApp(mode);
  try {
    await work(app, () => proxy!.silenceOn(trap.text, { after: trap.after, halfOpen: true }));
    t.regex(app.logs.text, /Ended a lost connection on the server \(thread \d+\)/);
  } finally {
    proxy!.pass();
    await app.close();
  }
}

for (const mode of modes) {
  test.serial(
    `${mode}: a COMMIT applied but unacknowledged answers the truth: 201 with the committed order`,
    async (t) => {
      if (DB_KIND !== 'mysql') return t.pass('the commit cut needs MariaDB');
      const app = apps.get(mode)!;
      const { buyer, product } = await world(app);
      const p = await product({ stockQuantity: 5 });
      const items = [{ productId: p, quantity: 2 }];
      const cut = armCut('applied');
      const res = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': `applied-${mode}-${p}` });
      await cut;
      t.is(res.status, 201);
      t.like(res.body.orders[0], { buyerId: buyer.id, status: 'PENDING' });
      const replay = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': `applied-${mode}-${p}` });
      t.is(replay.status, 201);
      t.is(replay.headers.get('idempotent-replayed'), 'true');
      t.deepEqual(replay.body, res.body);
      t.is(await ordersOf(app, buyer.id), 1);
      t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 2 });
      t.true(await actorAgrees(app, p, 3));
    },
  );

  test.serial(
    `${mode}: a COMMIT lost before the server applied it is placed again: 201, one order`,
    async (t) => {
      if (DB_KIND !== 'mysql') return t.pass('the commit cut needs MariaDB');
      const app = apps.get(mode)!;
      const { buyer, product } = await world(app);
      const p = await product({ stockQuantity: 5 });
      const items = [{ productId: p, quantity: 1 }];
      const cut = armCut('lost');
      const res = await placeOrder(app, buyer.token, items);
      await cut;
      t.is(res.status, 201);
      t.is(res.body.orders.length, 1);
      t.is(await ordersOf(app, buyer.id), 1);
      t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
      t.true(await actorAgrees(app, p, 4));
    },
  );

  for (const cutMode of ['applied', 'lost'] as const) {
    test.serial(
      `${mode}: an outcome that cannot be checked (${cutMode}) is 503 COMMIT_OUTCOME_UNKNOWN; the keyed retry makes one order`,
      async (t) => {
        if (DB_KIND !== 'mysql') return t.pass('the commit cut needs MariaDB');
        const app = apps.get(mode)!;
        const { buyer, product } = await world(app);
        const p = await product({ stockQuantity: 5 });
        const items = [{ productId: p, quantity: 1 }];
        const key = `unknown-${cutMode}-${mode}-${p}`;
        const cut = armCut(cutMode, 2500);
        const res = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
        await cut;
        t.is(res.status, 503);
        t.like(res.body, { status: 503, code: 'COMMIT_OUTCOME_UNKNOWN' });
        t.is(res.headers.get('retry-after'), '1');
        // The client retries with the same key until the database is back.
        const retry = await eventually(async () => {
          const again = await placeOrder(app, buyer.token, items, { 'Idempotency-Key': key });
          return again.status === 201 ? again : null;
        }, 10_000);
        t.is(retry.body.orders.length, 1);
        t.is(await ordersOf(app, buyer.id), 1);
        t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
        t.true(await actorAgrees(app, p, 4));
      },
    );
  }
}

for (const mode of modes) {
  test.serial(
    `${mode}: a COMMIT that reaches the server after the client gave up applies, and the check waits for it: 201, one order`,
    async (t) => {
      if (DB_KIND !== 'mysql') return t.pass('the late COMMIT needs MariaDB');
      // The client gives up on a query after DB_STATEMENT_TIMEOUT_MS + 1 s and drops the connection; the COMMIT
      // arrives 2.5 s after it was sent, before the close that followed it. A check that saw "no orders" before it
      // applied would place the order a second time.
      const app = await impatientApp(mode);
      try {
        const { buyer, product } = await world(app);
        const p = await product({ stockQuantity: 5 });
        const late = proxy!.delayOn('COMMIT', { after: 'insert into `orders`', delayMs: 2500 });
        const res = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]);
        await late;
        t.is(res.status, 201);
        t.is(res.body.orders.length, 1);
        t.is(await ordersOf(app, buyer.id), 1, 'the order was not placed a second time');
        t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 2 });
        t.true(await actorAgrees(app, p, 3));
        t.true(
          app.logs.lines.some((line) => line.includes('The connection was lost during COMMIT; checking')),
        );
      } finally {
        await app.close();
      }
    },
  );
}

for (const mode of modes) {
  test.serial(
    `${mode}: a COMMIT lost on a half-open connection (the server never learns of the loss): the check ends that connection on the server; one order, the product not left locked`,
    async (t) => {
      if (DB_KIND !== 'mysql') return t.pass('the half-open connection needs MariaDB');
      // The first check's locking read waits for the lost transaction in vain (1 s); then the service ends that
      // connection on the server, and the next check finds the transaction rolled back, so the order is decided again.
      await onHalfOpen(t, mode, { text: 'COMMIT', after: 'insert into `orders`' }, async (app, silence) => {
        const { buyer, product } = await world(app);
        const p = await product({ stockQuantity: 5 });
        const silenced = silence();
        const res = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]);
        await silenced;
        t.is(res.status, 201, res.text);
        t.is(res.body.orders.length, 1);
        t.is(await ordersOf(app, buyer.id), 1);
        t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 2 });
        t.true(await actorAgrees(app, p, 3));
        // Before, four checks waited in vain (503 COMMIT_OUTCOME_UNKNOWN), and every later order for the product met
        // the lost transaction's lock on its row.
        const next = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
        t.is(next.status, 201, next.text);
        t.deepEqual(await productRow(app, p), { stock: 2, status: 'ON_SALE', salesCount: 3 });
      });
    },
  );
}

for (const mode of modes) {
  test.serial(
    `${mode}: a statement unanswered on a half-open connection mid-transaction: 503, and the connection is ended on the server, so the product is not left locked`,
    async (t) => {
      if (DB_KIND !== 'mysql') return t.pass('the half-open connection needs MariaDB');
      // The INSERT after the stock UPDATE is silenced: the product's row is locked by then.
      await onHalfOpen(t, mode, { text: 'insert into `orders`' }, async (app, silence) => {
        const { buyer, product } = await world(app);
        const p = await product({ stockQuantity: 5 });
        const silenced = silence();
        const res = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]);
        await silenced;
        t.is(res.status, 503, res.text);
        t.like(res.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
        t.truthy(res.headers.get('retry-after'));
        t.is(await ordersOf(app, buyer.id), 0);
        const next = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
        t.is(next.status, 201, next.text);
        t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
        t.true(await actorAgrees(app, p, 4));
      });
    },
  );
}

test.serial(
  "any transaction: a statement unanswered on a half-open connection (a product's creation): 503, and the seller's row is not left locked",
  async (t) => {
    if (DB_KIND !== 'mysql') return t.pass('the half-open connection needs MariaDB');
    // The creation locks the seller's row (the product quota), then inserts the product: that INSERT is silenced.
    await onHalfOpen(t, 'actor', { text: 'insert into `products`' }, async (app, silence) => {
      const { seller } = await world(app);
      const categoryId = await createCategory(app);
      const create = (name: string) =>
        app.request('POST', '/api/v1/products', {
          token: seller.token,
          body: { categoryId, name, price: 10, stockQuantity: 5 },
        });
      const silenced = silence();
      const res = await create('Half-open');
      await silenced;
      t.is(res.status, 503, res.text);
      t.like(res.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
      const next = await create('After');
      t.is(next.status, 201, next.text);
      t.deepEqual(
        (await app.db('products').where('seller_id', seller.id).select('name')).map(
          (row: { name: string }) => row.name,
        ),
        ['After'],
      );
    });
  },
);

test.serial(
  'actor: a batch whose lost COMMIT is being checked holds back only its own products; they are decided on the database afterwards',
  async (t) => {
    if (DB_KIND !== 'mysql') return t.pass('the late COMMIT needs MariaDB');
    // The client gives up on the COMMIT after 2 s (statement 1 s + 1 s grace); the COMMIT would reach the server 6 s
    // after it was sent. Meanwhile the lost transaction holds its rows: the first check's locking read waits for it
    // (1 s), then the check ends that connection on the server and the next one finds the batch rolled back.
    const app = await impatientApp('actor');
    try {
      const { buyer, product } = await world(app);
      const lost = await product({ stockQuantity: 6 });
      const other = await product({ stockQuantity: 5 });
      const cold = await product({ stockQuantity: 5 });
      t.is((await placeOrder(app, buyer.token, [{ productId: other, quantity: 1 }])).status, 201); // actor loaded
      let caught!: () => void;
      const held = new Promise<void>((resolve) => (caught = resolve));
      const late = proxy!.delayOn('COMMIT', { after: 'insert into `orders`', delayMs: 6000, onHold: caught });
      let firstDone = false;
      const first = placeOrder(app, buyer.token, [{ productId: lost, quantity: 2 }]).finally(
        () => (firstDone = true),
      );
      await held;
      // An order for the same product meanwhile: it waits for the outcome instead of meeting the row lock. So does a
      // cart that reserves the same product at once and is submitted later, after its other product's first read.
      const same = placeOrder(app, buyer.token, [{ productId: lost, quantity: 3 }]);
      const cart = placeOrder(app, buyer.token, [
        { productId: lost, quantity: 1 },
        { productId: cold, quantity: 1 },
      ]);
      const sent = Date.now();
      const next = await placeOrder(app, buyer.token, [{ productId: other, quantity: 1 }]);
      const waited = Date.now() - sent;
      t.is(next.status, 201, next.text);
      // Before, the next batch waited for the whole check too: ~6 s here.
      t.true(waited < 4000, `the order for another product was answered after ${waited} ms`);
      t.false(firstDone, 'the lost batch was still being checked');

      const [res, sameRes, cartRes] = await Promise.all([first, same, cart]);
      await late;
      // The check ended the lost connection and found the batch rolled back, so it was decided again (201); 503 only
      // if the checks could not reach the database. Either way the books agree, and the order for the same product was
      // decided on the database's stock afterwards.
      if (res.status === 201) {
        t.is(res.body.orders.length, 1);
        t.is(sameRes.status, 201, sameRes.text); // 6 - 2 leaves exactly 3 + 1
        t.is(cartRes.status, 201, cartRes.text);
        t.deepEqual(await productRow(app, lost), { stock: 0, status: 'SOLD_OUT', salesCount: 6 });
        t.true(await actorAgrees(app, lost, 0));
      } else {
        t.like(res.body, { status: 503, code: 'COMMIT_OUTCOME_UNKNOWN' });
        const row = await productRow(app, lost);
        t.true(await actorAgrees(app, lost, row.stock));
        t.is(row.stock + row.salesCount, 6, `stock ${row.stock}, sold ${row.salesCount}`);
        t.not(cartRes.status, 500);
      }
      t.deepEqual(await productRow(app, other), { stock: 3, status: 'ON_SALE', salesCount: 2 });
      t.true(await actorAgrees(app, other, 3));
    } finally {
      await app.close();
    }
  },
);

// A status change's COMMIT lost on the way is checked the same way, by its history row: applied, the change is
// answered (not a 503, after which the client's retry would meet 409 for its own change); not applied, the order
// is read again and the change made once.
for (const cutMode of ['applied', 'lost'] as const) {
  test.serial(
    `a cancel whose COMMIT was ${cutMode === 'applied' ? 'applied but unacknowledged' : 'lost before it applied'}: 200 CANCELLED, stock given back once`,
    async (t) => {
      if (DB_KIND !== 'mysql') return t.pass('the commit cut needs MariaDB');
      const app = apps.get('actor')!;
      const { buyer, product } = await world(app);
      const p = await product({ stockQuantity: 5 });
      const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]);
      t.is(placed.status, 201);
      const orderId = placed.body.orders[0].id;
      const cut = proxy!.cutOn('COMMIT', {
        forward: cutMode === 'applied',
        after: 'insert into `order_status_history`',
      });
      const res = await app.request('POST', `/api/v1/orders/${orderId}/cancel`, { token: buyer.token });
      await cut;
      t.is(res.status, 200);
      t.like(res.body, { id: orderId, status: 'CANCELLED' });
      const history = await app.db('order_status_history').where('order_id', orderId).orderBy('id');
      t.deepEqual(
        history.map((row: { to_status: string }) => row.to_status),
        ['PENDING', 'CANCELLED'],
      );
      t.deepEqual(await productRow(app, p), { stock: 5, status: 'ON_SALE', salesCount: 0 });
      t.true(await actorAgrees(app, p, 5));
    },
  );
}

test.serial(
  "a seller's status change whose COMMIT was applied but unacknowledged: 200 with the change",
  async (t) => {
    if (DB_KIND !== 'mysql') return t.pass('the commit cut needs MariaDB');
    const app = apps.get('actor')!;
    const { buyer, seller, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
    const orderId = placed.body.orders[0].id;
    const cut = proxy!.cutOn('COMMIT', { forward: true, after: 'insert into `order_status_history`' });
    const res = await app.request('PATCH', `/api/v1/sellers/orders/${orderId}/status`, {
      token: seller.token,
      body: { status: 'CONFIRMED' },
    });
    await cut;
    t.is(res.status, 200);
    t.like(res.body, { id: orderId, status: 'CONFIRMED' });
    t.is(
      (await app.db('order_status_history').where({ order_id: orderId, to_status: 'CONFIRMED' })).length,
      1,
    );
  },
);

/**
 * Places an order on an app of its own behind the proxy, with the delivery's COMMIT cut after it reached the server
 * (`blackoutMs`: every connection refused that long from then on); `check` runs once the cut happened. Then the
 * delivery must be in the database once and logged once.
 */
async function deliveryCut(
  t: ExecutionContext,
  blackoutMs: number,
  check: (app: TestApp, logLine: string) => Promise<void>,
) {
  if (DB_KIND !== 'mysql') return t.pass('the commit cut needs MariaDB');
  const app = await startTestApp({
    database,
    logLevel: 'info',
    env: { DATABASE_URL: proxy!.urlFor(database!.env.DATABASE_URL) },
  });
  try {
    const { buyer, seller, product } = await world(app);
    const p = await product({ stockQuantity: 5 });
    const cut = proxy!.cutOn('COMMIT', { forward: true, after: 'into `notifications`', blackoutMs });
    const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
    t.is(placed.status, 201);
    const orderId = placed.body.orders[0].id;
    await cut;
    const logLine = `Delivered OrderCreated for order ${orderId} to member ${seller.id}`;
    await check(app, logLine);
    const outbox = await app.db('notification_outbox').where('event_type', 'OrderCreated');
    const ours = outbox.filter((row: { payload: string }) => JSON.parse(row.payload).orderId === orderId);
    t.is(ours.length, 1);
    t.truthy(ours[0].delivered_at);
    t.is((await app.db('notifications').where('outbox_id', ours[0].id)).length, 1);
    await app.bundle.services.dispatcher.stop();
    t.is(app.logs.lines.filter((line) => line.includes(logLine)).length, 1, 'logged once');
  } finally {
    await app.close();
  }
}

test.serial(
  'a delivery whose COMMIT was applied but unacknowledged is logged as delivered, once; the notification exists once',
  (t) =>
    deliveryCut(t, 0, async (app, logLine) => {
      await eventually(async () => app.logs.lines.some((line) => line.includes(logLine)));
    }),
);

test.serial(
  'a delivery applied whose outcome cannot be checked (the database gone a while) is not delivered again: logged once; the notification exists once',
  (t) =>
    // Every connection is refused for 2.5 s after the COMMIT: all four checks fail, and the rows are retried.
    deliveryCut(t, 2500, async (app, logLine) => {
      await eventually(async () =>
        app.logs.lines.some((line) => line.includes('The outcome of a lost COMMIT could not be checked')),
      );
      // The line was written before the COMMIT; once the database answers, the retry finds the row delivered.
      t.true(app.logs.lines.some((line) => line.includes(logLine)));
      await eventually(
        async () =>
          app.logs.lines.some((line) => line.includes('Delivery of 1 notification(s) failed; retrying')),
        15_000,
      );
      // The database answers again; stop() (in deliveryCut) then delivers what is due: the row is not, or it
      // would be logged twice.
      await eventually(
        async () =>
          app.db.raw('select 1').then(
            () => true,
            () => false,
          ),
        15_000,
      );
    }),
);
