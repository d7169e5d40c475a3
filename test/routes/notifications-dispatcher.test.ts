// The notification dispatcher: at-least-once delivery with exponential backoff on failure, exactly-once
// visibility (the unique outbox id collapses duplicates), and a flush on stop.
import test from 'ava';
import { backoffMs, createNotificationDispatcher } from '../../lib/notifications/dispatcher';
import { writeOutbox } from '../../lib/notifications/outbox';
import { createLogger } from '../../lib/logger';
import { createMember } from '../helpers/factories';
import { LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { eventually } from '../orders/order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
  await app.bundle.services.dispatcher.stop(); // these tests drive their own dispatchers
});
test.after.always(async () => {
  await app?.close();
});

async function outboxRow(recipientId: number, orderId: number, requestId: string): Promise<number> {
  await app.db.transaction((trx) =>
    writeOutbox(
      trx,
      [
        {
          type: 'OrderCreated',
          recipientId,
          payload: { sellerId: recipientId, orderId, orderNumber: `N-${orderId}` },
        },
      ],
      new Date(),
      requestId,
    ),
  );
  const row = await app
    .db('notification_outbox')
    .where({ recipient_id: recipientId })
    .orderBy('id', 'desc')
    .first('id');
  return Number(row.id);
}

test('backoff doubles per attempt up to the cap', (t) => {
  t.deepEqual(
    [1, 2, 3, 4, 5, 10].map((attempt) => backoffMs(attempt, 100, 1000)),
    [100, 200, 400, 800, 1000, 1000],
  );
});

test.serial(
  'a failed delivery is retried with backoff and delivered once the store works again',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const logs = new LogCollector();
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: createLogger({ level: 'info', format: 'line', out: logs }),
      baseBackoffMs: 100,
      maxBackoffMs: 400,
    });
    await app.db.schema.renameTable('notifications', 'notifications_away');
    let restored = false;
    try {
      const id = await outboxRow(seller.id, 4242, 'req-retry-1');
      const failures: number[] = [];
      dispatcher.events.on('failed', ({ outboxIds }) => {
        failures.push(...outboxIds);
      });
      dispatcher.start();
      await eventually(async () => failures.filter((f) => f === id).length >= 2, 5000);
      const row = await app.db('notification_outbox').where('id', id).first();
      t.true(row.attempts >= 2);
      t.is(row.delivered_at, null);
      t.truthy(row.last_error);
      t.true(new Date(row.next_attempt_at).getTime() > Date.now() - 1000);
      await app.db.schema.renameTable('notifications_away', 'notifications');
      restored = true;
      await eventually(
        async () => (await app.db('notification_outbox').where('id', id).first()).delivered_at !== null,
        5000,
      );
      const notes = await app.db('notifications').where('outbox_id', id);
      t.is(notes.length, 1);
      t.is(notes[0].member_id, seller.id);
      t.true(
        logs.lines.some((line) =>
          line.includes('[req-retry-1] [NotificationDispatcher] Delivered OrderCreated for order 4242'),
        ),
      );
    } finally {
      if (!restored) await app.db.schema.renameTable('notifications_away', 'notifications');
      await dispatcher.stop();
    }
  },
);

test.serial(
  'two dispatchers delivering the same rows: one notification per outbox row; stop() flushes',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const quiet = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
    const ids = [
      await outboxRow(seller.id, 1, 'a'),
      await outboxRow(seller.id, 2, 'b'),
      await outboxRow(seller.id, 3, 'c'),
    ];
    // Simulate a redelivery: mark one row pending again after it was delivered (a crash between the two writes).
    const first = createNotificationDispatcher({ db: app.db, logger: quiet });
    first.start();
    await first.stop();
    await app.db('notification_outbox').where('id', ids[0]).update({ delivered_at: null });
    const [a, b] = [
      createNotificationDispatcher({ db: app.db, logger: quiet }),
      createNotificationDispatcher({ db: app.db, logger: quiet }),
    ];
    a.start();
    b.start();
    await Promise.all([a.stop(), b.stop()]);
    const notes = await app.db('notifications').whereIn('outbox_id', ids).select('outbox_id');
    t.deepEqual(
      notes.map((n: { outbox_id: number }) => Number(n.outbox_id)).sort((x: number, y: number) => x - y),
      ids,
    );
    t.is(
      Number(
        (await app
          .db('notification_outbox')
          .whereIn('id', ids)
          .whereNull('delivered_at')
          .count({ n: '*' })
          .first())!.n,
      ),
      0,
    );
    const api = await app.request('GET', '/api/v1/notifications', { token: seller.token });
    t.is(api.body.totalElements, 3);
  },
);
