// The scheduled pruning (lib/maintenance/pruner.ts) against the real database: stop() during a pass over a
// backlog of several batches ends it after the batch under way (the rest goes at a later pass); a target that
// fails (its table renamed away) is logged and the others are still pruned; the first pass runs soon after start
// (MAINTENANCE_FIRST_PASS_SECONDS), not a whole PRUNE_INTERVAL_SECONDS later.
// Serial: the tests share one service and its schedule.
import test from 'ava';
import type { Knex } from 'knex';
import { createMember, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { until } from '../helpers/until';

const BATCH = 1000; // deleteInBatches' batch

let app: TestApp;
let buyer: TestMember;
test.before(async () => {
  app = await startTestApp({ env: { PRUNE_INTERVAL_SECONDS: '1' }, logLevel: 'info' });
  buyer = await createMember(app, 'BUYER');
});
test.after.always(async () => {
  await app?.close();
});

const pruner = () => app.bundle.services.pruner;

/** `count` Idempotency-Keys past their window, for `buyer`. */
async function expiredKeys(count: number, prefix: string): Promise<void> {
  const past = new Date(Date.now() - 60_000);
  const rows = Array.from({ length: count }, (_, i) => ({
    buyer_id: buyer.id,
    idem_key: `${prefix}-${i}`,
    request_hash: 'h'.repeat(64),
    response_status: 201,
    response_body: '[]',
    created_at: past,
    expires_at: past,
  }));
  await app.db.batchInsert('idempotency_keys', rows, 250);
}

const keysLeft = async (prefix: string) =>
  Number((await app.db('idempotency_keys').where('idem_key', 'like', `${prefix}-%`).count({ n: '*' }))[0].n);

/** Calls `onQuery` with the SQL of every query the service sends (until the returned function is called). */
function watchQueries(db: Knex, onQuery: (sql: string) => void): () => void {
  const listener = (data: { sql: string }) => onQuery(data.sql.toLowerCase());
  db.on('query', listener);
  return () => db.off('query', listener);
}

test.serial(
  'stop() during a pass over several batches ends it after the batch under way; a later pass deletes the rest',
  async (t) => {
    await pruner().stop();
    const total = 3 * BATCH + 500;
    await expiredKeys(total, 'backlog');

    let deletes = 0;
    let selectsAfterStop = 0;
    let stopping: Promise<void> | undefined;
    const unwatch = watchQueries(app.db, (sql) => {
      if (!sql.includes('idempotency_keys')) return;
      if (sql.startsWith('delete')) {
        deletes++;
        // The second batch is on its way to the database: stop now.
        if (deletes === 2) stopping = pruner().stop();
      } else if (sql.startsWith('select') && stopping) {
        selectsAfterStop++;
      }
    });
    t.teardown(unwatch);
    pruner().start(); // the next pass in 1 s
    await until(
      () => stopping !== undefined,
      10_000,
      () => `${deletes} batch deletes`,
    );
    await stopping;
    unwatch();
    t.is(deletes, 2, 'the batch under way finished, no further one started');
    t.is(selectsAfterStop, 0, 'no next batch was selected');
    t.is(await keysLeft('backlog'), total - 2 * BATCH);

    // Started again: a later pass deletes the rest.
    pruner().start();
    await until(
      async () => (await keysLeft('backlog')) === 0,
      10_000,
      () => 'the backlog was not pruned',
    );
    t.pass();
  },
);

test.serial(
  'a failing target is logged and the others are still pruned; it is pruned again once it works',
  async (t) => {
    await pruner().stop();
    const past = new Date(Date.now() - 60_000);
    const expiredToken = (familyId: string, hash: string) => ({
      member_id: buyer.id,
      family_id: familyId,
      token_hash: hash.repeat(64),
      expires_at: past,
      created_at: past,
    });
    await expiredKeys(3, 'while-away');
    // The first target's table is gone: every statement on it fails.
    await app.db.schema.renameTable('refresh_tokens', 'refresh_tokens_away');
    let deleted: Record<string, number>;
    try {
      deleted = await pruner().pruneOnce();
    } finally {
      await app.db.schema.renameTable('refresh_tokens_away', 'refresh_tokens');
    }
    t.deepEqual(deleted, { idempotencyKeys: 3, deliveredOutbox: 0, deletedProductImages: 0 });
    t.is(await keysLeft('while-away'), 0);
    t.regex(
      app.logs.text,
      /\[ERROR\] \[-\] \[Pruner\] Pruning refreshTokens failed; trying again at the next interval\n\w*Error: (ER_NO_SUCH_TABLE|SQLITE_ERROR): /,
    );

    // The table is back: the next pass prunes it.
    await app.db('refresh_tokens').insert(expiredToken('back-family', 'b'));
    const next = await pruner().pruneOnce();
    t.is(next.refreshTokens, 1);
    t.is(await app.db('refresh_tokens').where('family_id', 'back-family').first(), undefined);
  },
);

test.serial(
  'the first pass runs within MAINTENANCE_FIRST_PASS_SECONDS of start, not a whole interval later',
  async (t) => {
    const restarted = await startTestApp({
      database: app.database,
      env: { PRUNE_INTERVAL_SECONDS: '600', MAINTENANCE_FIRST_PASS_SECONDS: '1' },
    });
    t.teardown(() => restarted.close());
    t.is(restarted.config.maintenanceFirstPassSeconds, 1);
    await pruner().stop(); // this file's other instance stays out of it
    await restarted.bundle.services.pruner.stop();
    await expiredKeys(3, 'first-pass');
    const started = Date.now();
    restarted.bundle.services.pruner.start();
    const waited = await until(
      async () => (await keysLeft('first-pass')) === 0,
      5_000,
      () => 'the first pass did not come',
    );
    t.log(`pruned ${Date.now() - started} ms after start (polled for ${waited} ms)`);
    t.true(Date.now() - started < 3_000);
  },
);
