// The client-side statement limit of lib/db-timeouts.ts, on real MariaDB behind the test proxy: a statement that
// gets no answer fails after DB_STATEMENT_TIMEOUT_MS + 1 s and its connection is closed; the statements queued
// behind it on that connection (mysql2 runs one at a time) fail with it, as a database-unavailable error, instead
// of waiting for an answer mysql2 would never give them.
import test from 'ava';
import type { Knex } from 'knex';
import { createDb } from '../../lib/db';
import { toClientError } from '../../lib/db-errors';
import { ServiceUnavailableError } from '../../lib/errors';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { createTestDatabase, DB_KIND, testConfig, type TestDatabase } from '../helpers/harness';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

let database: TestDatabase;
let proxy: TcpProxy;
let db: Knex;

test.before(async () => {
  if (DB_KIND !== 'mysql') return;
  database = await createTestDatabase();
  proxy = await startTcpProxy({
    host: '127.0.0.1',
    port: Number(new URL(database.env.DATABASE_URL).port || 3306),
  });
  const config = testConfig({ ...database.env, DATABASE_URL: proxy.urlFor(database.env.DATABASE_URL) });
  db = createDb(config.database, { connectMs: 500, acquireMs: 1000, statementMs: 1000 });
});
test.after.always(async () => {
  await db?.destroy();
  await proxy?.close();
  await database?.drop();
});

/** How a query settled, and when (ms after `start`); 'no answer' when it did not within `ms`. */
function settled(work: Promise<unknown>, start: number, ms: number) {
  return Promise.race([
    work.then(
      () => ({ ok: true as const, err: undefined, at: Date.now() - start }),
      (err: Error & { code?: string; fatal?: boolean }) => ({
        ok: false as const,
        err,
        at: Date.now() - start,
      }),
    ),
    new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), ms)),
  ]);
}

mysqlOnly(
  'statements queued behind one that got no answer fail with it, as the database unavailable',
  async (t) => {
    const client = db.client as {
      acquireConnection(): Promise<object>;
      releaseConnection(c: object): Promise<unknown>;
    };
    const connection = await client.acquireConnection();
    try {
      const silenced = proxy.silenceOn('SELECT 41');
      const start = Date.now();
      // Two statements sent on one connection at once: mysql2 queues the second behind the first.
      const [first, second] = await Promise.all([
        settled(db.raw('SELECT 41 AS n').connection(connection), start, 6_000),
        settled(db.raw('SELECT 42 AS n').connection(connection), start, 6_000),
      ]);
      await silenced;
      t.not(first, 'no answer');
      t.not(second, 'no answer', 'the queued statement was answered');
      if (first === 'no answer' || second === 'no answer') return;
      t.false(first.ok);
      t.is(first.err?.code, 'PROTOCOL_SEQUENCE_TIMEOUT');
      t.true(first.at >= 1_900 && first.at < 4_000, `the first failed after ${first.at} ms`);
      t.false(second.ok);
      t.true(second.err?.fatal);
      t.regex(String(second.err?.message), /connection was closed after an earlier statement got no answer/);
      t.true(second.at - first.at < 500, `the second failed ${second.at - first.at} ms after the first`);
      t.true(toClientError(second.err) instanceof ServiceUnavailableError);
    } finally {
      await client.releaseConnection(connection);
      proxy.pass();
    }
    // The pool hands out a working connection next.
    const [rows] = (await db.raw('SELECT 43 AS n')) as [Array<{ n: number }>];
    t.is(rows[0].n, 43);
  },
);
