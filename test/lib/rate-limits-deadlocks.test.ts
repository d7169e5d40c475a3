// The rate limiters' store calls (consume, clear) retry when InnoDB picks them as a deadlock victim:
// each is driven into a real deadlock with a rival transaction (test/helpers/deadlocks.ts) and must return
// its normal result. The rival holds a shared lock on the `expire` index (covering, so no primary-key lock)
// over every live window; the store's statement then holds its counter row and waits to write its `expire`
// entry, and the rival asks for that counter row. SQLite has one writer and no deadlocks. A refund changes one
// row's points only (inside its window), holding one lock: it cannot be in a cycle. What a refund does is tested
// on both databases.
import test from 'ava';
import type { Knex } from 'knex';
import { createDb } from '../../lib/db';
import { createRateLimits, type Limiter } from '../../lib/limits/rate-limits';
import { createLogger } from '../../lib/logger';
import { openRival } from '../helpers/deadlocks';
import { createTestDatabase, DB_KIND, LogCollector, testConfig, type TestDatabase } from '../helpers/harness';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

let database: TestDatabase;
let db: Knex; // the service's pool, with the service's session limits
let limiter: Limiter;
test.before(async () => {
  database = await createTestDatabase();
  const config = testConfig(database.env);
  db = createDb(config.database, config.dbTimeouts);
  await db.migrate.latest();
  const logger = createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });
  limiter = createRateLimits({ db, logger }).limiter('deadlock', { points: 5, seconds: 60 })!;
});
test.after.always(async () => {
  await db?.destroy();
  await database?.drop();
});

const counter = async (key: string) =>
  (await db('rate_limits').where('key', `deadlock:${key}`).first()) as
    { points: number; expire: number } | undefined;

/**
 * Runs `call` against a rival that, once the call waits for it, asks for the counter row of `key`: a real
 * deadlock whose victim is the call's transaction. Returns the call's outcome and the counter row as the
 * rival read it after the deadlock (that is, once the victim's writes were rolled back).
 */
async function throughDeadlock(key: string, call: () => Promise<void>) {
  const rival = await openRival(testConfig(database.env).database);
  try {
    await rival.trx.raw(
      'SELECT `key` FROM rate_limits FORCE INDEX (rate_limits_expire_index) WHERE expire >= ? LOCK IN SHARE MODE',
      [Date.now()],
    );
    const outcome = call().then(
      () => 'done',
      (err: Error & { code?: string }) => err.code ?? err.message,
    );
    await rival.blocks(outcome);
    // The cycle closes here; this statement returns only because the call's transaction was rolled back.
    const [rows] = await rival.trx.raw('SELECT points, expire FROM rate_limits WHERE `key` = ? FOR UPDATE', [
      `deadlock:${key}`,
    ]);
    await rival.trx.rollback();
    return { outcome: await outcome, afterDeadlock: rows[0] as { points: number } | undefined };
  } finally {
    await rival.end();
  }
}

mysqlOnly('consume: a deadlock victim is run again and counts its point once', async (t) => {
  const { outcome, afterDeadlock } = await throughDeadlock('consume', () =>
    limiter.consume('consume', 'full'),
  );
  t.is(outcome, 'done');
  t.is(afterDeadlock, undefined, "the victim's new counter row was rolled back");
  t.is((await counter('consume'))?.points, 1, 'the retry wrote it');
});

test.serial('a refund gives a point back inside its window only, and never below zero', async (t) => {
  await limiter.consume('refund', 'full');
  await limiter.consume('refund', 'full');
  await limiter.refund('refund');
  t.is((await counter('refund'))?.points, 1);
  await limiter.refund('refund');
  await limiter.refund('refund'); // more refunds than points: stays at 0
  t.is((await counter('refund'))?.points, 0);
  // A window that has ended: the refund opens no new one (rate-limiter-flexible's reward started it at -1 point,
  // an extra attempt in the next window).
  const ended = Date.now() - 1_000;
  await db('rate_limits').where('key', 'deadlock:refund').update({ points: 3, expire: ended });
  await limiter.refund('refund');
  t.deepEqual(await counter('refund'), { key: 'deadlock:refund', points: 3, expire: ended });
  // The next attempts count in a fresh window from 1: five, then 429.
  for (let i = 0; i < 5; i++) await limiter.consume('refund', 'full');
  await t.throwsAsync(limiter.consume('refund', 'full'), { message: 'full' });
});

mysqlOnly('clear: a deadlock victim is run again and the counter is gone', async (t) => {
  await limiter.consume('clear', 'full');
  await limiter.consume('clear', 'full');
  const { outcome, afterDeadlock } = await throughDeadlock('clear', () => limiter.clear('clear'));
  t.is(outcome, 'done');
  t.is(afterDeadlock?.points, 2, "the victim's delete was rolled back");
  t.is(await counter('clear'), undefined, 'the retry deleted it');
});
