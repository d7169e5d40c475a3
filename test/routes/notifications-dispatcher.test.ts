// The notification dispatcher: at-least-once delivery with exponential backoff on failure, exactly-once
// visibility (the unique outbox id collapses duplicates), and a flush on stop.
import test from 'ava';
import { backoffMs, createNotificationDispatcher } from '../../lib/notifications/dispatcher';
import { writeOutbox } from '../../lib/notifications/outbox';
import { createLogger } from '../../lib/logger';
import { runWithContext } from '../../lib/request-context';
import { createMember } from '../helpers/factories';
import { LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { watchQueries, type QueryEvent } from '../helpers/queries';
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
      // No sweep within the test: the retries come from the backoff's own timer alone.
      sweepIntervalMs: 600_000,
    });
    await app.db.schema.renameTable('notifications', 'notifications_away');
    let restored = false;
    try {
      const id = await outboxRow(seller.id, 4242, 'req-retry-1');
      const failures: number[] = [];
      let firstFailureAt = 0;
      dispatcher.events.on('failed', ({ outboxIds }) => {
        if (outboxIds.includes(id) && firstFailureAt === 0) firstFailureAt = Date.now();
        failures.push(...outboxIds);
      });
      const delivered: number[] = [];
      dispatcher.events.on('delivered', ({ outboxIds }) => {
        delivered.push(...outboxIds);
      });
      dispatcher.start();
      await eventually(async () => failures.filter((f) => f === id).length >= 2, 5000);
      const row = await app.db('notification_outbox').where('id', id).first();
      t.true(row.attempts >= 2, `attempts ${row.attempts}`);
      t.is(row.delivered_at, null);
      t.truthy(row.last_error);
      // Rescheduled by the backoff: the second failure (after the first was reported) put it >= 200 ms ahead.
      t.true(
        new Date(row.next_attempt_at).getTime() >= firstFailureAt + 200,
        `next_attempt_at ${new Date(row.next_attempt_at).toISOString()}, first failure ${new Date(firstFailureAt).toISOString()}`,
      );
      await app.db.schema.renameTable('notifications_away', 'notifications');
      restored = true;
      // 'delivered' is emitted after the commit and the log line; MariaDB shows the committed row to other
      // connections before the dispatcher has its COMMIT reply, so the row alone says nothing about the log.
      await eventually(async () => delivered.includes(id), 5000);
      const after = await app.db('notification_outbox').where('id', id).first();
      t.not(after.delivered_at, null);
      const notes = await app.db('notifications').where('outbox_id', id);
      t.is(notes.length, 1);
      t.is(notes[0].member_id, seller.id);
      t.true(
        logs.lines.some((line) =>
          line.includes('[req-retry-1] [NotificationDispatcher] Delivered OrderCreated for order 4242'),
        ),
        logs.lines.join('\n'),
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

test.serial(
  'kicks during a delivery run wait for one pause before the next run (the outbox fills); a lone kick delivers at once',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const quiet = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
    const pauses: number[] = [];
    let endPause!: () => void;
    const paused = new Promise<void>((resolve) => (endPause = resolve));
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: quiet,
      pauseMs: 40,
      pause: (ms) => {
        pauses.push(ms);
        return paused;
      },
    });
    const first = await outboxRow(seller.id, 5001, 'pause-1');
    let second = 0;
    const delivered: number[][] = [];
    dispatcher.events.on('delivered', async ({ outboxIds }) => {
      delivered.push(outboxIds);
      if (delivered.length === 1) {
        t.deepEqual(pauses, [], 'the first kick delivered without a pause');
        // An order committed while this run delivers: it kicks the running dispatcher.
        second = await outboxRow(seller.id, 5002, 'pause-2');
        dispatcher.kick();
      }
    });
    try {
      dispatcher.start();
      await eventually(async () => pauses.length === 1, 5000);
      t.deepEqual(pauses, [40]);
      t.true(delivered[0].includes(first));
      const waiting = await app.db('notification_outbox').where('id', second).first();
      t.is(waiting.delivered_at, null, 'nothing is delivered during the pause');
      t.is(delivered.length, 1);
      endPause();
      await eventually(async () => delivered.length === 2, 5000);
      t.true(delivered[1].includes(second));
    } finally {
      endPause();
      await dispatcher.stop();
    }
  },
);

test.serial('stop() during a pause ends it at once and still delivers what is due', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const quiet = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
  let paused = 0;
  const dispatcher = createNotificationDispatcher({
    db: app.db,
    logger: quiet,
    pauseMs: 40,
    // A pause that never ends by itself: only stop() can end it.
    pause: () => {
      paused += 1;
      return new Promise<void>(() => undefined);
    },
  });
  const first = await outboxRow(seller.id, 5101, 'stop-1');
  let second = 0;
  const delivered: number[] = [];
  dispatcher.events.on('delivered', async ({ outboxIds }) => {
    delivered.push(...outboxIds);
    if (second === 0) {
      second = await outboxRow(seller.id, 5102, 'stop-2');
      dispatcher.kick();
    }
  });
  try {
    dispatcher.start();
    await eventually(async () => paused === 1, 5000);
    t.true(delivered.includes(first));
    t.false(delivered.includes(second), 'the kicked run waits for the pause');
    const stopped = await Promise.race([
      dispatcher.stop().then(() => 'stopped'),
      new Promise((resolve) => setTimeout(() => resolve('still paused after 3 s'), 3000)),
    ]);
    t.is(stopped, 'stopped');
    t.true(delivered.includes(second), 'what was due is delivered before stop() resolves');
    t.is(paused, 1);
  } finally {
    await dispatcher.stop(); // also when an assertion above failed (a second stop() changes nothing)
  }
});

/** Delivery transactions: each marks its batch delivered with one UPDATE. */
const marksDelivered = (q: QueryEvent) =>
  /^update [`"]notification_outbox[`"] set [`"]delivered_at[`"]/i.test(q.sql);

test.serial(
  'orders committed during the pause are delivered together: one delivery transaction takes all their rows',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const quiet = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
    let endPause!: () => void;
    const paused = new Promise<void>((resolve) => (endPause = resolve));
    let pauses = 0;
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: quiet,
      pause: () => {
        pauses += 1;
        return paused;
      },
    });
    const first = await outboxRow(seller.id, 6000, 'batch-0');
    const later: number[] = [];
    const batches: number[][] = [];
    dispatcher.events.on('delivered', async ({ outboxIds }) => {
      batches.push(outboxIds);
      if (batches.length === 1) {
        // An order commits while the first run delivers: its kick makes the next run wait for the pause.
        later.push(await outboxRow(seller.id, 6001, 'batch-1'));
        dispatcher.kick();
      }
    });
    const deliveries = watchQueries(app.db, marksDelivered);
    try {
      dispatcher.start();
      await eventually(async () => pauses === 1, 5000);
      // More orders commit during the pause, each in its own transaction, each kicking the dispatcher.
      for (let order = 6002; order < 6022; order++) {
        later.push(await outboxRow(seller.id, order, `batch-${order - 6000}`));
        dispatcher.kick();
      }
      t.is(batches.length, 1, 'nothing is delivered during the pause');
      endPause();
      await eventually(async () => batches.length === 2, 5000);
      await dispatcher.idle();
      t.deepEqual(batches[0], [first]);
      t.deepEqual(
        [...batches[1]].sort((a, b) => a - b),
        later,
        "one batch took the 21 orders' rows",
      );
      t.is(batches.length, 2);
      t.is(deliveries.count(), 2, 'two delivery transactions in all');
      const rows = await app.db('notification_outbox').whereIn('id', later).select('delivered_at');
      t.is(rows.length, 21);
      t.is(
        new Set(rows.map((row: { delivered_at: unknown }) => new Date(row.delivered_at as string).getTime()))
          .size,
        1,
        'all marked delivered by one transaction (one delivered_at)',
      );
    } finally {
      deliveries.stop();
      endPause();
      await dispatcher.stop();
    }
  },
);

test.serial('the pause is 100 ms when not configured (the default README.md states)', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const quiet = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
  const pauses: number[] = [];
  const dispatcher = createNotificationDispatcher({
    db: app.db,
    logger: quiet,
    // Recorded, then waited for real: only its length is under test.
    pause: (ms) => {
      pauses.push(ms);
      return new Promise((resolve) => setTimeout(resolve, ms));
    },
  });
  await outboxRow(seller.id, 6100, 'default-pause-0');
  let kicked = false;
  dispatcher.events.on('delivered', async () => {
    if (kicked) return;
    kicked = true;
    await outboxRow(seller.id, 6101, 'default-pause-1');
    dispatcher.kick();
  });
  try {
    dispatcher.start();
    await eventually(async () => pauses.length === 1, 5000);
    t.deepEqual(pauses, [100]);
  } finally {
    await dispatcher.stop();
  }
});

test.serial(
  "a failed batch's rows get their backoff in one UPDATE per attempt count, not one per row",
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const quiet = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: quiet,
      baseBackoffMs: 60_000,
      maxBackoffMs: 60_000,
    });
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push(await outboxRow(seller.id, 6200 + i, `backoff-${i}`));
    // Half the rows failed twice before: the batch has two attempt counts.
    await app.db('notification_outbox').whereIn('id', ids.slice(0, 6)).update({ attempts: 2 });
    const backoffs = watchQueries(app.db, (q) =>
      /^update [`"]notification_outbox[`"] set [`"]attempts[`"]/i.test(q.sql),
    );
    await app.db.schema.renameTable('notifications', 'notifications_away');
    let failed = 0;
    dispatcher.events.on('failed', () => {
      failed += 1;
    });
    try {
      dispatcher.start();
      await eventually(async () => failed === 1, 5000);
      t.is(backoffs.count(), 2);
      const rows = await app.db('notification_outbox').whereIn('id', ids).orderBy('id');
      t.deepEqual(
        rows.map((row: { attempts: number }) => row.attempts),
        [3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1],
      );
      t.true(
        rows.every(
          (row: { delivered_at: unknown; last_error: string | null }) =>
            row.delivered_at === null && row.last_error,
        ),
      );
      t.true(
        rows.every(
          (row: { next_attempt_at: Date | string }) =>
            new Date(row.next_attempt_at).getTime() > Date.now() + 30_000,
        ),
      );
    } finally {
      backoffs.stop();
      await dispatcher.stop();
      await app.db.schema.renameTable('notifications_away', 'notifications');
      await app.db('notification_outbox').whereIn('id', ids).delete();
    }
  },
);

test.serial(
  'a run woken inside a request logs each row with its own request id, and none for a row without one',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const logs = new LogCollector();
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: createLogger({ level: 'info', format: 'line', out: logs }),
    });
    await app.db.transaction((trx) =>
      writeOutbox(
        trx,
        [
          {
            type: 'OrderCreated',
            recipientId: seller.id,
            payload: { sellerId: seller.id, orderId: 6300, orderNumber: 'N-6300' },
          },
        ],
        new Date(),
        null,
      ),
    );
    const own = await outboxRow(seller.id, 6301, 'own-request-1');
    const delivered: number[] = [];
    dispatcher.events.on('delivered', ({ outboxIds }) => {
      delivered.push(...outboxIds);
    });
    try {
      // Started (and so kicked) from inside another request's context.
      runWithContext({ requestId: 'kicking-request' }, () => dispatcher.start());
      await eventually(async () => delivered.includes(own), 5000);
      const line = (orderId: number) => logs.lines.find((l) => l.includes(`for order ${orderId} `)) ?? '';
      t.regex(line(6300), /\[INFO\] \[-\] \[NotificationDispatcher\] Delivered OrderCreated for order 6300 /);
      t.regex(
        line(6301),
        /\[own-request-1\] \[NotificationDispatcher\] Delivered OrderCreated for order 6301 /,
      );
      t.false(logs.text.includes('kicking-request'));
    } finally {
      await dispatcher.stop();
    }
  },
);

test.serial(
  "a buyer's notifications list in the order their causes committed, also when the later one was delivered first",
  async (t) => {
    const buyer = await createMember(app, 'BUYER');
    const dispatcher = createNotificationDispatcher({
      db: app.db,
      logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
    });
    const change = (from: 'PENDING' | 'CONFIRMED', to: 'CONFIRMED' | 'SHIPPED') => ({
      type: 'OrderStatusChanged' as const,
      recipientId: buyer.id,
      payload: { buyerId: buyer.id, orderId: 6400, orderNumber: 'N-6400', from, to },
    });
    const confirmedAt = new Date(Date.now() - 2000);
    const shippedAt = new Date(Date.now() - 1000);
    await app.db.transaction((trx) =>
      writeOutbox(trx, [change('PENDING', 'CONFIRMED')], confirmedAt, 'order-1'),
    );
    await app.db.transaction((trx) =>
      writeOutbox(trx, [change('CONFIRMED', 'SHIPPED')], shippedAt, 'order-2'),
    );
    const [confirmed, shipped] = (
      await app.db('notification_outbox').where('recipient_id', buyer.id).orderBy('id').select('id')
    ).map((row: { id: number }) => Number(row.id));
    // The first one's delivery failed a while ago and waits for its backoff: the second is delivered first.
    await app
      .db('notification_outbox')
      .where('id', confirmed)
      .update({ next_attempt_at: new Date(Date.now() + 60_000) });
    const delivered: number[] = [];
    dispatcher.events.on('delivered', ({ outboxIds }) => {
      delivered.push(...outboxIds);
    });
    try {
      dispatcher.start();
      await eventually(async () => delivered.includes(shipped), 5000);
      await app.db('notification_outbox').where('id', confirmed).update({ next_attempt_at: new Date() });
      dispatcher.kick();
      await eventually(async () => delivered.includes(confirmed), 5000);
      const notes = await app.db('notifications').whereIn('outbox_id', [confirmed, shipped]).orderBy('id');
      t.deepEqual(
        notes.map((note: { outbox_id: number }) => Number(note.outbox_id)),
        [shipped, confirmed],
        'delivered in the other order',
      );

      const res = await app.request('GET', '/api/v1/notifications', { token: buyer.token });
      t.is(res.status, 200);
      t.deepEqual(
        res.body.content.map((item: { payload: { to: string }; createdAt: string }) => [
          item.payload.to,
          item.createdAt,
        ]),
        [
          ['SHIPPED', shippedAt.toISOString()],
          ['CONFIRMED', confirmedAt.toISOString()],
        ],
      );
    } finally {
      await dispatcher.stop();
    }
  },
);
