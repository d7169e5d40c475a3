// Who wakes the notification dispatcher. With its sweep set far off (NOTIFICATION_SWEEP_MS, 10 minutes), a row
// nobody woke it for waits (the setting is applied), and only a wake can deliver a row within the test: a placement's commit, a seller's status change and an expiry sweep each
// wake it, so the event is delivered at once, not at the next sweep.
import test from 'ava';
import { writeOutbox } from '../../lib/notifications/outbox';
import { startTestApp, type TestApp } from '../helpers/harness';
import { eventually, placeOrder, world } from '../orders/order-fixtures';

const EXPIRY_SECONDS = 3600;
let app: TestApp;
test.before(async () => {
  app = await startTestApp({
    env: {
      NOTIFICATION_SWEEP_MS: '600000',
      ORDER_PENDING_EXPIRY_SECONDS: String(EXPIRY_SECONDS),
      ORDER_EXPIRY_SWEEP_SECONDS: '86400',
    },
  });
});
test.after.always(async () => {
  await app?.close();
});

/** The order's outbox rows of `eventType`, with whether each was delivered and its notification row. */
async function deliveries(orderId: number, eventType: string) {
  const rows = (await app.db('notification_outbox').where('event_type', eventType)) as Array<{
    id: number;
    payload: string;
    delivered_at: unknown;
  }>;
  const mine = rows.filter((row) => JSON.parse(row.payload).orderId === orderId);
  const notes = await app.db('notifications').whereIn(
    'outbox_id',
    mine.map((row) => row.id),
  );
  return {
    rows: mine.length,
    delivered: mine.filter((row) => row.delivered_at !== null).length,
    notes: notes.length,
  };
}

const delivered = (orderId: number, eventType: string, rows: number) =>
  eventually(async () => {
    const seen = await deliveries(orderId, eventType);
    return seen.rows === rows && seen.delivered === rows && seen.notes === rows ? seen : null;
  }, 3000);

test.serial(
  'a row nobody woke the dispatcher for waits for the sweep: none within 5.5 s when it is 10 minutes away',
  async (t) => {
    t.is(app.config.notificationSweepMs, 600_000);
    const { seller } = await world(app);
    // Written as another process would (its commit wakes its own dispatcher, not this one).
    await app.db.transaction((trx) =>
      writeOutbox(
        trx,
        [
          {
            type: 'OrderCreated',
            recipientId: seller.id,
            payload: { sellerId: seller.id, orderId: 0, orderNumber: 'N-0' },
          },
        ],
        new Date(),
        'elsewhere',
      ),
    );
    // Longer than the default sweep (5 s): with it, the row would be delivered by now.
    await new Promise((resolve) => setTimeout(resolve, 5500));
    const row = await app.db('notification_outbox').where({ recipient_id: seller.id }).first('delivered_at');
    t.is(row.delivered_at, null);
    // The next wake delivers it (and whatever else is due).
    app.bundle.services.dispatcher.kick();
    await t.notThrowsAsync(
      eventually(async () => {
        const after = await app
          .db('notification_outbox')
          .where({ recipient_id: seller.id })
          .first('delivered_at');
        return after.delivered_at !== null;
      }, 3000),
    );
  },
);

test.serial(
  "a placement's commit wakes the dispatcher: the seller's OrderCreated is delivered at once",
  async (t) => {
    const { buyer, product } = await world(app);
    const res = await placeOrder(app, buyer.token, [{ productId: await product(), quantity: 1 }]);
    t.is(res.status, 201, res.text);
    await t.notThrowsAsync(delivered(res.body.orders[0].id, 'OrderCreated', 1));
  },
);

test.serial(
  "a seller's status change wakes it: the buyer's OrderStatusChanged is delivered at once",
  async (t) => {
    const { buyer, seller, product } = await world(app);
    const placed = await placeOrder(app, buyer.token, [{ productId: await product(), quantity: 1 }]);
    const orderId = placed.body.orders[0].id as number;
    const confirmed = await app.request('PATCH', `/api/v1/sellers/orders/${orderId}/status`, {
      token: seller.token,
      body: { status: 'CONFIRMED' },
    });
    t.is(confirmed.status, 200, confirmed.text);
    t.is(confirmed.body.status, 'CONFIRMED');
    await t.notThrowsAsync(delivered(orderId, 'OrderStatusChanged', 1));
  },
);

test.serial('an expiry sweep wakes it: the buyer and the seller are told at once', async (t) => {
  const { buyer, product } = await world(app);
  const placed = await placeOrder(app, buyer.token, [{ productId: await product(), quantity: 1 }]);
  const orderId = placed.body.orders[0].id as number;
  await delivered(orderId, 'OrderCreated', 1);
  const expired = await app.bundle.services.orderExpiry!.sweepOnce(
    new Date(Date.now() + (EXPIRY_SECONDS + 1) * 1000),
  );
  t.true(expired.includes(orderId));
  await t.notThrowsAsync(delivered(orderId, 'OrderStatusChanged', 2));
});
