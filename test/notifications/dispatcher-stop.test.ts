// stop() ends with a final drain: outbox rows committed after the dispatcher's last run, with no kick and long
// before its next sweep, are delivered (notification row, delivered_at, log line with the request id) before
// stop() resolves; for a dispatcher of its own and for the service's shutdown (SIGTERM's path). A stopped
// dispatcher delivers nothing more.
import test from 'ava';
import { createNotificationDispatcher } from '../../lib/notifications/dispatcher';
import { writeOutbox, type OutboxEvent } from '../../lib/notifications/outbox';
import { createLogger } from '../../lib/logger';
import { createMember } from '../helpers/factories';
import {
  createTestDatabase,
  LogCollector,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../helpers/harness';

let database: TestDatabase;
let app: TestApp;
test.before(async () => {
  database = await createTestDatabase();
  app = await startTestApp({ database });
  await app.bundle.services.dispatcher.stop(); // these tests drive their own dispatchers
});
test.after.always(async () => {
  await app?.close();
  await database?.drop();
});

/** `count` outbox rows for `recipientId`, committed without kicking any dispatcher; their ids. */
async function commitOutbox(recipientId: number, count: number, requestId: string): Promise<number[]> {
  const base = Math.floor(Math.random() * 1e6);
  const events: OutboxEvent[] = Array.from({ length: count }, (_, i) => ({
    type: 'OrderCreated',
    recipientId,
    payload: { sellerId: recipientId, orderId: base + i, orderNumber: `N-${base + i}` },
  }));
  await app.db.transaction((trx) => writeOutbox(trx, events, new Date(), requestId));
  const rows = await app
    .db('notification_outbox')
    .where('recipient_id', recipientId)
    .orderBy('id')
    .select('id');
  return rows.map((row: { id: number | string }) => Number(row.id));
}

async function deliveredOf(ids: number[]) {
  const notes = await app
    .db('notifications')
    .whereIn('outbox_id', ids)
    .orderBy('outbox_id')
    .select('outbox_id');
  const undelivered = await app
    .db('notification_outbox')
    .whereIn('id', ids)
    .whereNull('delivered_at')
    .count({ n: '*' })
    .first();
  return {
    notified: notes.map((note: { outbox_id: number | string }) => Number(note.outbox_id)),
    undelivered: Number(undelivered!.n),
  };
}

test.serial(
  'stop() delivers rows committed after the last run (no kick, no sweep due) before it resolves',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const logs = new LogCollector();
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: createLogger({ level: 'info', format: 'line', out: logs }),
      batchSize: 5, // the final drain takes several batches
      sweepIntervalMs: 600_000,
    });
    try {
      dispatcher.start();
      await dispatcher.idle(); // its first run found nothing of this seller's
      const ids = await commitOutbox(seller.id, 12, 'req-before-stop');
      t.is(ids.length, 12);
      await new Promise((resolve) => setTimeout(resolve, 100));
      t.deepEqual(
        await deliveredOf(ids),
        { notified: [], undelivered: 12 },
        'nothing delivers them but stop()',
      );

      await dispatcher.stop();
      t.deepEqual(await deliveredOf(ids), { notified: ids, undelivered: 0 });
      const lines = logs.lines.filter((line) => line.includes('req-before-stop'));
      t.is(lines.length, 12, 'one delivery line per row, with the request id');
      for (const id of ids) t.true(lines.some((line) => line.includes(`(outbox ${id})`)));

      // Stopped: a row committed now waits for the next dispatcher, even through a kick and a second stop().
      const [late] = (await commitOutbox(seller.id, 1, 'req-after-stop')).slice(-1);
      dispatcher.kick();
      await dispatcher.stop();
      t.deepEqual(await deliveredOf([late]), { notified: [], undelivered: 1 });
    } finally {
      await dispatcher.stop();
    }
  },
);

test.serial("the service's shutdown delivers outbox rows committed just before it", async (t) => {
  // A second instance on this database: its dispatcher is the service's own, started with the service.
  const instance = await startTestApp({ database, logLevel: 'info' });
  let closed = false;
  try {
    const seller = await createMember(app, 'SELLER');
    await instance.bundle.services.dispatcher.idle();
    const ids = await commitOutbox(seller.id, 3, 'req-before-shutdown');
    await instance.shutdown();
    closed = true;
    t.deepEqual(await deliveredOf(ids), { notified: ids, undelivered: 0 });
    const lines = instance.logs.lines.filter((line) => /\bDelivered OrderCreated\b/.test(line));
    for (const id of ids)
      t.true(
        lines.some((line) => line.includes('req-before-shutdown') && line.includes(`(outbox ${id})`)),
        `the delivery of outbox ${id} is logged with its request id`,
      );
    const notes = await app.db('notifications').whereIn('outbox_id', ids).select('member_id', 'type');
    t.deepEqual(
      notes.map((note: { member_id: number; type: string }) => [Number(note.member_id), note.type]),
      ids.map(() => [seller.id, 'OrderCreated']),
    );
  } finally {
    if (!closed) await instance.shutdown();
  }
});
