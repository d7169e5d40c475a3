// The outbox is claimed once: several dispatchers (several instances on one database) over the same pending
// rows deliver each row exactly once: one notification row, one delivery log line, one attempt.
// On MariaDB two app instances (two connection pools) race through `FOR UPDATE SKIP LOCKED`; on SQLite two
// dispatchers share the one writer.
import test from 'ava';
import {
  createNotificationDispatcher,
  type NotificationDispatcher,
} from '../../lib/notifications/dispatcher';
import { writeOutbox, type OutboxEvent } from '../../lib/notifications/outbox';
import { createLogger } from '../../lib/logger';
import { createMember } from '../helpers/factories';
import { DB_KIND, LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { eventually } from '../orders/order-fixtures';

const EVENTS = 360;

let first: TestApp;
let second: TestApp;
test.before(async () => {
  first = await startTestApp();
  second = DB_KIND === 'mysql' ? await startTestApp({ database: first.database }) : first;
  // These tests drive their own dispatchers, one per instance.
  await first.bundle.services.dispatcher.stop();
  await second.bundle.services.dispatcher.stop();
});
test.after.always(async () => {
  if (second !== first) await second?.close();
  await first?.close();
});

const DELIVERED = /Delivered OrderCreated for order (\d+) to member (\d+) \(outbox (\d+)\)/;

test(`two dispatchers (${DB_KIND === 'mysql' ? 'two instances on one MariaDB' : 'one SQLite writer'}) over ${EVENTS} pending outbox rows deliver each exactly once`, async (t) => {
  const seller = await createMember(first, 'SELLER');
  const events: OutboxEvent[] = Array.from({ length: EVENTS }, (_, i) => ({
    type: 'OrderCreated',
    recipientId: seller.id,
    payload: { sellerId: seller.id, orderId: 10_000 + i, orderNumber: `N-${i}` },
  }));
  await first.db.transaction((trx) => writeOutbox(trx, events, new Date(), 'req-claim'));
  const ids = (
    await first.db('notification_outbox').where('recipient_id', seller.id).orderBy('id').select('id')
  ).map((row: { id: number }) => Number(row.id));
  t.is(ids.length, EVENTS);

  const logs = [new LogCollector(), new LogCollector()];
  // Small batches so the two dispatchers interleave many times over the same rows.
  const dispatchers: NotificationDispatcher[] = [first, second].map((app, i) =>
    createNotificationDispatcher({
      db: app.db,
      logger: createLogger({ level: 'info', format: 'line', out: logs[i] }),
      batchSize: 15,
    }),
  );
  dispatchers.forEach((dispatcher) => dispatcher.start());
  await eventually(
    async () =>
      Number(
        (await first
          .db('notification_outbox')
          .whereIn('id', ids)
          .whereNull('delivered_at')
          .count({ n: '*' })
          .first())!.n,
      ) === 0,
    20_000,
  );
  await Promise.all(dispatchers.map((dispatcher) => dispatcher.stop()));

  const delivered = logs.map((collector) =>
    collector.lines.flatMap((line) => {
      const match = DELIVERED.exec(line);
      return match ? [Number(match[3])] : [];
    }),
  );
  t.log(`deliveries per dispatcher: ${delivered.map((lines) => lines.length).join(' + ')}`);
  const all = delivered.flat().sort((a, b) => a - b);
  t.deepEqual(all, ids, 'one delivery log line per outbox row, none twice');
  t.true(
    delivered.every((lines) => lines.length > 0),
    `both dispatchers delivered (${delivered.map((lines) => lines.length).join(' + ')})`,
  );
  const notes = await first.db('notifications').whereIn('outbox_id', ids).select('outbox_id');
  t.is(notes.length, EVENTS);
  const attempts = await first.db('notification_outbox').whereIn('id', ids).distinct('attempts');
  t.deepEqual(
    attempts.map((row: { attempts: number }) => Number(row.attempts)),
    [1],
    'each row marked delivered once',
  );
  const api = await first.request('GET', '/api/v1/notifications?size=1', { token: seller.token });
  t.is(api.status, 200);
  t.is(api.body.totalElements, EVENTS);
  t.is(api.body.content[0].type, 'OrderCreated');
});
