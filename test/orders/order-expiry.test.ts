// Expiry of unconfirmed orders (ORDER_PENDING_EXPIRY_SECONDS, issue 15): the sweep cancels a PENDING order
// older than the limit through the order machine (EXPIRE, by the system), restores its stock once and notifies
// the buyer and the seller(s); CONFIRMED orders never expire; a buyer's cancel or a seller's confirm racing
// the sweep, or two instances sweeping one database, leave exactly one outcome. The sweep is driven with a
// later clock (sweepOnce(now)), not by waiting; one test lets the schedule run on an order made old in SQL. An
// order the database refuses to update (a trigger) is logged and left PENDING, the rest of its sweep expires;
// stop() during a scheduled sweep ends it after the order under way.
// Serial: a sweep with a later clock expires every due order of the shared database, other tests' too.
import test from 'ava';
import { createMember, createProduct } from '../helpers/factories';
import {
  createTestDatabase,
  DB_KIND,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { eventually, placeOrder, productRow, world } from './order-fixtures';

const EXPIRY_SECONDS = 3600;
const env = { ORDER_PENDING_EXPIRY_SECONDS: String(EXPIRY_SECONDS), ORDER_EXPIRY_SWEEP_SECONDS: '86400' };
const later = (seconds = EXPIRY_SECONDS + 1) => new Date(Date.now() + seconds * 1000);

let database: TestDatabase;
let app: TestApp;
let twin: TestApp;
test.before(async () => {
  database = await createTestDatabase();
  app = await startTestApp({ database, env });
  twin = await startTestApp({ database, env });
});
test.after.always(async () => {
  await app?.close();
  await twin?.close();
  await database?.drop();
});

const expiry = (target: TestApp) => target.bundle.services.orderExpiry!;

/**
 * The instance that sweeps against `app`: the twin on MariaDB. On SQLite two pools on one file in ONE process
 * stall each other (better-sqlite3 waits for the file lock synchronously, holding the event loop the other
 * pool's transaction needs, ~5 s per order), so there the concurrent sweeps share one instance; separate
 * processes on SQLite are serialised by its one writer.
 */
const sweeper = () => (DB_KIND === 'sqlite' ? app : twin);

/** Sweeps until the order is not due any more (other tests' old orders share the database). */
async function sweepFor(target: TestApp, orderIds: number[], now = later()): Promise<number[]> {
  const expired = await expiry(target).sweepOnce(now);
  return expired.filter((id) => orderIds.includes(id));
}

const outboxFor = async (orderId: number) =>
  (
    (await app.db('notification_outbox').where('event_type', 'OrderStatusChanged')) as Array<{
      recipient_id: number;
      payload: string;
    }>
  )
    .map((row) => ({ recipientId: Number(row.recipient_id), payload: JSON.parse(row.payload) }))
    .filter((row) => row.payload.orderId === orderId)
    .sort((a, b) => a.recipientId - b.recipientId);

test.serial('unset: no expiry sweep exists; the config reads back', async (t) => {
  const plain = await startTestApp({ database });
  t.teardown(() => plain.close());
  t.is(plain.bundle.services.orderExpiry, null);
  t.is(plain.config.orderPolicies.pendingExpiry, null);
  t.deepEqual(app.config.orderPolicies.pendingExpiry, {
    seconds: EXPIRY_SECONDS,
    sweepSeconds: 86400,
    batch: 100,
  });
});

test.serial(
  'an old PENDING order is cancelled by the sweep: history by the system, stock restored, buyer and sellers notified',
  async (t) => {
    const { buyer, seller, product } = await world(app);
    const other = await createMember(app, 'SELLER');
    const a = await product({ stockQuantity: 5 });
    const b = await createProduct(app, other.id, { stockQuantity: 2 });
    const placed = await placeOrder(app, buyer.token, [
      { productId: a, quantity: 5 },
      { productId: b, quantity: 2 },
    ]);
    t.is(placed.status, 201);
    const ids: number[] = placed.body.orders.map((o: { id: number }) => o.id);
    t.deepEqual(await productRow(app, a), { stock: 0, status: 'SOLD_OUT', salesCount: 5 });

    // Not old enough yet: nothing happens.
    t.deepEqual(await sweepFor(app, ids, later(EXPIRY_SECONDS - 60)), []);
    t.deepEqual(
      await sweepFor(app, ids),
      [...ids].sort((x, y) => x - y),
    );

    for (const id of ids) {
      const read = await app.request('GET', `/api/v1/orders/${id}`, { token: buyer.token });
      t.is(read.status, 200);
      t.is(read.body.status, 'CANCELLED');
      t.like(read.body.statusHistory[1], { from: 'PENDING', to: 'CANCELLED', changedBy: null });
      t.is(read.body.statusHistory.length, 2);
    }
    t.deepEqual(await productRow(app, a), { stock: 5, status: 'ON_SALE', salesCount: 0 });
    t.deepEqual(await productRow(app, b), { stock: 2, status: 'ON_SALE', salesCount: 0 });
    const mine = placed.body.orders.find(
      (o: { items: Array<{ sellerId: number }> }) => o.items[0].sellerId === seller.id,
    );
    const payload = {
      buyerId: buyer.id,
      orderId: mine.id,
      orderNumber: mine.orderNumber,
      from: 'PENDING',
      to: 'CANCELLED',
    };
    t.deepEqual(await outboxFor(mine.id), [
      { recipientId: Math.min(buyer.id, seller.id), payload },
      { recipientId: Math.max(buyer.id, seller.id), payload },
    ]);
    // Delivered: both sides see it in their notifications.
    for (const member of [buyer, seller]) {
      const seen = await eventually(async () => {
        const res = await app.request('GET', '/api/v1/notifications', { token: member.token });
        t.is(res.status, 200);
        return res.body.content.find(
          (n: { type: string; payload: { orderId: number; to: string } }) =>
            n.type === 'OrderStatusChanged' && n.payload.orderId === mine.id && n.payload.to === 'CANCELLED',
        );
      });
      t.deepEqual(seen.payload, payload);
    }
    // A second sweep finds nothing more of these; the buyer can no longer cancel them.
    t.deepEqual(await sweepFor(app, ids), []);
    const cancel = await app.request('POST', `/api/v1/orders/${mine.id}/cancel`, { token: buyer.token });
    assertError(t, cancel, 409, 'ORDER_NOT_CANCELLABLE', `/api/v1/orders/${mine.id}/cancel`);
    t.deepEqual(await productRow(app, a), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  },
);

test.serial('a CONFIRMED order never expires', async (t) => {
  const { buyer, seller, product } = await world(app);
  const productId = await product({ stockQuantity: 10 });
  const res = await placeOrder(app, buyer.token, [{ productId, quantity: 4 }]);
  const id = res.body.orders[0].id;
  const confirm = await app.request('PATCH', `/api/v1/sellers/orders/${id}/status`, {
    token: seller.token,
    body: { status: 'CONFIRMED' },
  });
  t.is(confirm.status, 200);
  t.deepEqual(await sweepFor(app, [id], later(EXPIRY_SECONDS * 1000)), []);
  const read = await app.request('GET', `/api/v1/orders/${id}`, { token: buyer.token });
  t.is(read.body.status, 'CONFIRMED');
  t.deepEqual(await productRow(app, productId), { stock: 6, status: 'ON_SALE', salesCount: 4 });
});

test.serial(
  'a sweep takes at most ORDER_EXPIRY_BATCH orders, oldest first; the next sweep the rest',
  async (t) => {
    const small = await startTestApp({ database, env: { ...env, ORDER_EXPIRY_BATCH: '2' } });
    t.teardown(() => small.close());
    const { buyer, product } = await world(small);
    const productId = await product({ stockQuantity: 10 });
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await placeOrder(small, buyer.token, [{ productId, quantity: 1 }])).body.orders[0].id);
    // Older than every other test's orders (the sweep goes oldest first, across the shared database).
    await small
      .db('orders')
      .whereIn('id', ids)
      .update({ ordered_at: new Date(Date.now() - 400 * 86_400_000) });
    const now = later(-1000); // due only for orders made older than the expiry above
    const first = await expiry(small).sweepOnce(now);
    t.is(first.length, 2);
    t.deepEqual(first, ids.slice(0, 2));
    t.deepEqual(await expiry(small).sweepOnce(now), [ids[2]]);
    t.deepEqual(await productRow(small, productId), { stock: 10, status: 'ON_SALE', salesCount: 0 });
  },
);

test.serial('the schedule runs the sweep and logs one line for a sweep that expired something', async (t) => {
  const scheduled = await startTestApp({
    database,
    env: { ...env, ORDER_EXPIRY_SWEEP_SECONDS: '1' },
    logLevel: 'info',
  });
  t.teardown(() => scheduled.close());
  const { buyer, product } = await world(scheduled);
  const productId = await product({ stockQuantity: 3 });
  const id = (await placeOrder(scheduled, buyer.token, [{ productId, quantity: 3 }])).body.orders[0].id;
  await scheduled
    .db('orders')
    .where('id', id)
    .update({ ordered_at: new Date(Date.now() - 2 * EXPIRY_SECONDS * 1000) });
  const read = await eventually(async () => {
    const res = await scheduled.request('GET', `/api/v1/orders/${id}`, { token: buyer.token });
    return res.body.status === 'CANCELLED' && res;
  }, 15_000);
  t.is(read.status, 200);
  t.deepEqual(await productRow(scheduled, productId), { stock: 3, status: 'ON_SALE', salesCount: 0 });
  const lines = await eventually(async () => {
    const found = scheduled.logs.lines.filter(
      (line) => line.includes('Expired') && line.includes('PENDING for over'),
    );
    return found.length > 0 && found;
  });
  t.regex(lines[0], /\[INFO\] \[-\] \[OrderExpiry\] Expired 1 order\(s\) left PENDING for over 3600 s$/);
});

test.serial(
  'stop() during a sweep ends it after the order under way, consistent; a later sweep expires the rest',
  async (t) => {
    const scheduled = await startTestApp({
      database,
      env: { ...env, ORDER_EXPIRY_SWEEP_SECONDS: '1' },
      logLevel: 'info',
    });
    t.teardown(() => scheduled.close());
    await expiry(scheduled).stop();
    await expiry(scheduled).sweepOnce(); // what other tests left due, so these orders are the sweep's batch
    const { buyer, product } = await world(scheduled);
    const productId = await product({ stockQuantity: 10 });
    const ids: number[] = [];
    for (let i = 0; i < 4; i++)
      ids.push((await placeOrder(scheduled, buyer.token, [{ productId, quantity: 1 }])).body.orders[0].id);
    await scheduled
      .db('orders')
      .whereIn('id', ids)
      .update({ ordered_at: new Date(Date.now() - 2 * EXPIRY_SECONDS * 1000) });

    // The first order's compare-and-set is on its way to the database: stop now.
    let stopping: Promise<void> | undefined;
    const onQuery = (data: { sql: string }) => {
      if (!stopping && /^update .orders. set .status./i.test(data.sql)) stopping = expiry(scheduled).stop();
    };
    scheduled.db.on('query', onQuery);
    t.teardown(() => scheduled.db.off('query', onQuery));
    expiry(scheduled).start(); // the next sweep in 1 s
    await eventually(async () => stopping !== undefined, 10_000);
    await stopping;
    scheduled.db.off('query', onQuery);

    const statuses = async () =>
      (await scheduled.db('orders').whereIn('id', ids).orderBy('id').select('status')).map(
        (row: { status: string }) => row.status,
      );
    t.deepEqual(await statuses(), ['CANCELLED', 'PENDING', 'PENDING', 'PENDING']);
    t.deepEqual(await productRow(scheduled, productId), { stock: 7, status: 'ON_SALE', salesCount: 3 });
    t.is((await scheduled.db('order_status_history').where('order_id', ids[0])).length, 2);
    t.true(scheduled.logs.lines.some((line) => line.includes('Expired 1 order(s) left PENDING')));

    // Started again: the next sweep expires the rest.
    expiry(scheduled).start();
    await eventually(async () => (await statuses()).every((status) => status === 'CANCELLED'), 10_000);
    t.deepEqual(await productRow(scheduled, productId), { stock: 10, status: 'ON_SALE', salesCount: 0 });
  },
);

test.serial(
  'the first sweep runs within MAINTENANCE_FIRST_PASS_SECONDS of start, not a whole sweep interval later',
  async (t) => {
    const restarted = await startTestApp({
      database,
      env: { ...env, MAINTENANCE_FIRST_PASS_SECONDS: '1' }, // sweeps every 86400 s
    });
    t.teardown(() => restarted.close());
    await expiry(restarted).stop();
    const { buyer, product } = await world(restarted);
    const productId = await product({ stockQuantity: 2 });
    const id = (await placeOrder(restarted, buyer.token, [{ productId, quantity: 2 }])).body.orders[0].id;
    await restarted
      .db('orders')
      .where('id', id)
      .update({ ordered_at: new Date(Date.now() - 2 * EXPIRY_SECONDS * 1000) });
    const started = Date.now();
    expiry(restarted).start();
    await eventually(
      async () => (await restarted.db('orders').where('id', id).first('status')).status === 'CANCELLED',
      5_000,
    );
    t.true(Date.now() - started < 3_000, `expired ${Date.now() - started} ms after start`);
    t.deepEqual(await productRow(restarted, productId), { stock: 2, status: 'ON_SALE', salesCount: 0 });
  },
);

/** A trigger that makes the database refuse every UPDATE of one order's row (a real error, on its own). */
async function refuseUpdatesOf(target: TestApp, orderId: number): Promise<() => Promise<void>> {
  await target.db.raw(
    DB_KIND === 'mysql'
      ? `CREATE TRIGGER expiry_refused BEFORE UPDATE ON orders FOR EACH ROW BEGIN
           IF NEW.id = ${orderId} THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test'; END IF;
         END`
      : `CREATE TRIGGER expiry_refused BEFORE UPDATE ON orders WHEN NEW.id = ${orderId} BEGIN
           SELECT RAISE(ABORT, 'refused by the test');
         END`,
  );
  return async () => {
    await target.db.raw('DROP TRIGGER expiry_refused');
  };
}

test.serial(
  'an order that fails to expire is logged and left PENDING; the others of the sweep expire and are announced',
  async (t) => {
    const logged = await startTestApp({ database, env, logLevel: 'info' });
    t.teardown(() => logged.close());
    const { buyer, product } = await world(logged);
    const productId = await product({ stockQuantity: 10 });
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await placeOrder(logged, buyer.token, [{ productId, quantity: 1 }])).body.orders[0].id);
    await logged
      .db('orders')
      .whereIn('id', ids)
      .update({ ordered_at: new Date(Date.now() - 400 * 86_400_000) });
    const now = later(-1000); // due only for orders made older than the expiry above

    const allow = await refuseUpdatesOf(logged, ids[1]);
    let expired: number[];
    try {
      expired = await expiry(logged).sweepOnce(now);
    } finally {
      await allow();
    }
    t.deepEqual(expired, [ids[0], ids[2]]);
    const statuses = async () =>
      (await logged.db('orders').whereIn('id', ids).orderBy('id').select('status')).map(
        (row: { status: string }) => row.status,
      );
    t.deepEqual(await statuses(), ['CANCELLED', 'PENDING', 'CANCELLED']);
    t.deepEqual(await productRow(logged, productId), { stock: 9, status: 'ON_SALE', salesCount: 1 });
    t.is((await logged.db('order_status_history').where('order_id', ids[1])).length, 1);
    t.regex(
      logged.logs.text,
      new RegExp(
        `\\[ERROR\\] \\[-\\] \\[OrderExpiry\\] Expiring order ${ids[1]} failed; the next sweep tries it again`,
      ),
    );
    t.true(
      logged.logs.lines.some((line) => line.endsWith('Expired 2 order(s) left PENDING for over 3600 s')),
    );
    // What did expire is announced: the buyer hears of both.
    const told = await eventually(async () => {
      const res = await logged.request('GET', '/api/v1/notifications', { token: buyer.token });
      const orderIds: number[] = res.body.content
        .filter((n: { type: string }) => n.type === 'OrderStatusChanged')
        .map((n: { payload: { orderId: number } }) => n.payload.orderId);
      return orderIds.length >= 2 && orderIds.sort((a, b) => a - b);
    });
    t.deepEqual(told, [ids[0], ids[2]]);

    // The database takes it again: the next sweep expires it.
    t.deepEqual(await expiry(logged).sweepOnce(now), [ids[1]]);
    t.deepEqual(await productRow(logged, productId), { stock: 10, status: 'ON_SALE', salesCount: 0 });
  },
);

for (const racer of ['cancel', 'confirm'] as const) {
  test.serial(
    `${racer === 'cancel' ? "a buyer's cancel" : "a seller's confirm"} racing the sweep: exactly one wins, stock restored at most once`,
    async (t) => {
      const { buyer, seller, product } = await world(app);
      const productId = await product({ stockQuantity: 100 });
      const ids: number[] = [];
      for (let i = 0; i < 8; i++)
        ids.push((await placeOrder(app, buyer.token, [{ productId, quantity: 2 }])).body.orders[0].id);
      const act = (id: number) =>
        racer === 'cancel'
          ? app.request('POST', `/api/v1/orders/${id}/cancel`, { token: buyer.token })
          : app.request('PATCH', `/api/v1/sellers/orders/${id}/status`, {
              token: seller.token,
              body: { status: 'CONFIRMED' },
            });
      // The sweep starts a moment after the requests, so either side may win any one order.
      const sweep = new Promise((resolve) => setTimeout(resolve, 10)).then(() => sweepFor(sweeper(), ids));
      const [expired, ...answers] = await Promise.all([sweep, ...ids.map(act)]);
      let restoredBySweep = 0;
      let memberWon = 0;
      for (const [index, id] of ids.entries()) {
        const answer = answers[index];
        const byRow = await app.db('order_status_history').where('order_id', id).orderBy('id');
        t.is(byRow.length, 2, `order ${id}: one change after PENDING`);
        if (expired.includes(id)) {
          restoredBySweep++;
          assertError(
            t,
            answer,
            409,
            racer === 'cancel' ? 'ORDER_NOT_CANCELLABLE' : 'INVALID_STATUS_TRANSITION',
          );
          t.like(byRow[1], { from_status: 'PENDING', to_status: 'CANCELLED', changed_by: null });
        } else {
          memberWon++;
          t.is(answer.status, 200, answer.text);
          t.is(answer.body.status, racer === 'cancel' ? 'CANCELLED' : 'CONFIRMED');
          t.is(Number(byRow[1].changed_by), racer === 'cancel' ? buyer.id : seller.id);
        }
      }
      t.is(restoredBySweep + memberWon, ids.length);
      t.log(`sweep won ${restoredBySweep}, the ${racer} won ${memberWon}`);
      // Each order's 2 units came back exactly once if it ended CANCELLED, never if CONFIRMED.
      const cancelled = racer === 'cancel' ? ids.length : restoredBySweep;
      t.deepEqual(await productRow(app, productId), {
        stock: 100 - 2 * (ids.length - cancelled),
        status: 'ON_SALE',
        salesCount: 2 * (ids.length - cancelled),
      });
    },
  );
}

test.serial(
  'two sweeps at once (two instances on MariaDB): each order expires once, its stock comes back once',
  async (t) => {
    const { buyer, product } = await world(app);
    const productId = await product({ stockQuantity: 30 });
    const ids: number[] = [];
    for (let i = 0; i < 10; i++)
      ids.push((await placeOrder(app, buyer.token, [{ productId, quantity: 3 }])).body.orders[0].id);
    t.is((await productRow(app, productId)).stock, 0);
    const [byApp, byTwin] = await Promise.all([sweepFor(app, ids), sweepFor(sweeper(), ids)]);
    t.deepEqual(
      [...byApp, ...byTwin].sort((x, y) => x - y),
      ids,
    );
    t.log(`instance A expired ${byApp.length}, instance B ${byTwin.length}`);
    t.deepEqual(await productRow(app, productId), { stock: 30, status: 'ON_SALE', salesCount: 0 });
    for (const id of ids) t.is((await app.db('order_status_history').where('order_id', id)).length, 2);
  },
);
