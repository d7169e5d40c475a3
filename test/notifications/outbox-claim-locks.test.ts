// A delivery's claim locks the rows it claims and nothing else: an order committing its outbox rows while a
// dispatcher holds its claim transaction never waits for it (MariaDB: the claim runs at READ COMMITTED, so its
// `FOR UPDATE SKIP LOCKED` takes no gap locks on the pending index, where new rows go), and a second claim
// meanwhile skips the claimed rows. SQLite has one writer: nothing to prove there.
import test from 'ava';
import { claimDue, inClaimTransaction } from '../../lib/notifications/dispatcher';
import { writeOutbox, type OutboxEvent } from '../../lib/notifications/outbox';
import { createMember } from '../helpers/factories';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';

const mysqlTest = DB_KIND === 'mysql' ? test : test.skip;

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
  await app.bundle.services.dispatcher.stop(); // the test claims by hand
});
test.after.always(() => app?.close());

/** The lost-COMMIT check the dispatcher passes; no COMMIT is lost here, so it is never asked. */
const noLostCommit = () => ({ logger: app.logger, committed: async () => true });

const eventsFor = (recipientId: number, from: number, count: number): OutboxEvent[] =>
  Array.from({ length: count }, (_, i) => ({
    type: 'OrderCreated',
    recipientId,
    payload: { sellerId: recipientId, orderId: from + i, orderNumber: `N-${from + i}` },
  }));

mysqlTest(
  'an order writes its outbox rows while a delivery holds its claim, without waiting for it',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    await app.db.transaction((trx) => writeOutbox(trx, eventsFor(seller.id, 1, 5), new Date(), 'req-due'));
    const claimedAt = new Date(Date.now() + 1000); // every row written so far is due

    const outcome = await inClaimTransaction(
      app.db,
      async (trx) => {
        const claimed = await claimDue(trx, claimedAt, 50);
        // Another connection, as an order's commit would be; a lock wait fails after 1 s instead of 50.
        const written = await app.db
          .transaction(async (order) => {
            await order.raw('SET SESSION innodb_lock_wait_timeout = 1');
            try {
              await writeOutbox(order, eventsFor(seller.id, 100, 3), new Date(Date.now() + 5000), 'req-new');
            } finally {
              await order.raw('SET SESSION innodb_lock_wait_timeout = DEFAULT');
            }
            return 'written';
          })
          .catch((err: Error) => err.message);
        // A second dispatcher meanwhile: the claimed rows are skipped, the new ones are not due yet.
        const second = await inClaimTransaction(
          app.db,
          (other) => claimDue(other, claimedAt, 50),
          noLostCommit(),
        );
        return { claimed: claimed.length, written, second: second.length };
      },
      noLostCommit(),
    );

    t.is(outcome.written, 'written', 'the order did not wait for the delivery transaction');
    t.true(outcome.claimed >= 5, `the claim took the due rows (${outcome.claimed})`);
    t.is(outcome.second, 0, 'a second claim skips the rows the first one holds');
    const rows = await app
      .db('notification_outbox')
      .where('recipient_id', seller.id)
      .count({ n: '*' })
      .first();
    t.is(Number(rows!.n), 8);
  },
);
