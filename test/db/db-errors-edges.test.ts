// Edges of the database error handling (lib/db.ts, lib/db-errors.ts, lib/db-timeouts.ts) that a mutation hunt found
// unpinned: which driver errors are "the database is unavailable" (503 with Retry-After) and which are deadlocks,
// row contention or constraint violations, the retry of deadlock victims (3 runs in all), the session limits each
// pooled connection gets (SQLite's busy timeout; MariaDB's lock wait and statement time) and the place it records
// for ending it on the server (none when its handshake id is not the server's thread id).
import test from 'ava';
import mysql from 'mysql2';
import {
  createDb,
  isDeadlockVictim,
  isForeignKeyViolation,
  isRowContention,
  isServerWaitTimeout,
  isUniqueViolation,
  retryDeadlocks,
} from '../../lib/db';
import { DB_RETRY_AFTER_SECONDS, isDatabaseUnavailable, toClientError } from '../../lib/db-errors';
import { limitMysqlConnection, placeOf } from '../../lib/db-timeouts';
import { ServiceUnavailableError } from '../../lib/errors';
import { createTestDatabase, DB_KIND, testConfig } from '../helpers/harness';

// Driver errors. Each error is shaped as its driver delivers it (mysql2: code, errno, fatal; better-sqlite3: code;
// knex: KnexTimeoutError; Objection: nativeError), for codes a test cannot make the real server produce on demand.

const driverError = (fields: Record<string, unknown>) =>
  Object.assign(new Error(String(fields.code ?? fields.errno ?? 'error')), fields);

test('unavailable: network failures, lost or killed connections, a server that stops or cannot store', (t) => {
  const unavailable = [
    { code: 'ECONNREFUSED', errno: -111, fatal: true },
    { code: 'ECONNRESET', errno: -104, fatal: true },
    { code: 'ECONNABORTED', fatal: true },
    { code: 'ETIMEDOUT', fatal: true },
    { code: 'EPIPE', fatal: true },
    { code: 'EHOSTUNREACH', fatal: true },
    { code: 'ENETUNREACH', fatal: true },
    { code: 'EHOSTDOWN', fatal: true },
    { code: 'ENOTFOUND', fatal: true },
    { code: 'EAI_AGAIN', fatal: true },
    { code: 'PROTOCOL_CONNECTION_LOST', fatal: true },
    { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true },
    { code: 'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR', fatal: true },
    { code: 'ER_LOCK_WAIT_TIMEOUT', errno: 1205 },
    { code: 'ER_LOCK_DEADLOCK', errno: 1213 },
    { code: 'ER_STATEMENT_TIMEOUT', errno: 1969 },
    { code: 'ER_QUERY_TIMEOUT', errno: 3024 },
    { code: 'ER_CON_COUNT_ERROR', errno: 1040 },
    { code: 'ER_TOO_MANY_USER_CONNECTIONS', errno: 1203 },
    { code: 'ER_SERVER_SHUTDOWN', errno: 1053 },
    { code: 'ER_CONNECTION_KILLED', errno: 1927 },
    { code: 'ER_NET_READ_INTERRUPTED', errno: 1159 },
    { code: 'ER_NET_WRITE_INTERRUPTED', errno: 1161 },
    // MariaDB-only errors that mysql2 may know by number only
    { errno: 1969 }, // max_statement_time
    { errno: 2006 }, // CR_SERVER_GONE_ERROR
    { errno: 2013 }, // CR_SERVER_LOST
    { errno: 1021 }, // ER_DISK_FULL
    { errno: 1114 }, // ER_RECORD_FILE_FULL
    { errno: 1290 }, // ER_OPTION_PREVENTS_STATEMENT (read_only)
    { errno: 1836 }, // ER_READ_ONLY_MODE
    { code: 'SQLITE_BUSY' },
    { code: 'SQLITE_BUSY_SNAPSHOT' },
    { code: 'SQLITE_BUSY_TIMEOUT' },
    { code: 'SQLITE_FULL' },
    { code: 'SQLITE_IOERR' },
    { code: 'SQLITE_IOERR_WRITE' },
    { code: 'SQLITE_IOERR_FSYNC' },
    { code: 'SQLITE_READONLY' },
    { code: 'SQLITE_READONLY_DBMOVED' },
    { name: 'KnexTimeoutError' },
    // mysql2: a statement on a connection that already failed carries no code
    { fatal: true },
  ];
  for (const fields of unavailable) {
    const err = driverError(fields);
    t.true(isDatabaseUnavailable(err), JSON.stringify(fields));
    const client = toClientError(err);
    t.true(client instanceof ServiceUnavailableError, JSON.stringify(fields));
    t.is((client as ServiceUnavailableError).retryAfterSeconds, DB_RETRY_AFTER_SECONDS);
  }
  t.is(DB_RETRY_AFTER_SECONDS, 5);
});

test('not unavailable: constraint, syntax and other errors, and codes that only look alike', (t) => {
  for (const fields of [
    { code: 'ER_DUP_ENTRY', errno: 1062 },
    { code: 'ER_NO_REFERENCED_ROW_2', errno: 1452 },
    { code: 'ER_PARSE_ERROR', errno: 1064 },
    { code: 'ER_NO_SUCH_TABLE', errno: 1146 },
    { code: 'ER_BAD_FIELD_ERROR', errno: 1054 },
    { code: 'SQLITE_CONSTRAINT_UNIQUE' },
    { code: 'SQLITE_ERROR' },
    { code: 'SQLITE_IOERRX' }, // a family is matched whole: SQLITE_IOERR or SQLITE_IOERR_<detail>
    { code: 'SQLITE_READONLYX' },
    { code: 'SQLITE_MISMATCH' },
    { code: 'ER_DUP_ENTRY', fatal: true }, // fatal with a code: judged by the code
    {},
  ]) {
    const err = driverError(fields);
    t.false(isDatabaseUnavailable(err), JSON.stringify(fields));
    t.is(toClientError(err), err);
  }
});

test('unavailable also when wrapped: Objection nativeError, an Error cause, a chain of wrappers', (t) => {
  const lost = driverError({ code: 'PROTOCOL_CONNECTION_LOST', fatal: true });
  t.true(isDatabaseUnavailable(Object.assign(new Error('DBError'), { nativeError: lost })));
  t.true(isDatabaseUnavailable(new Error('the commit failed', { cause: lost })));
  const deep = new Error('outer', {
    cause: new Error('middle', { cause: new Error('inner', { cause: lost }) }),
  });
  t.true(isDatabaseUnavailable(deep));
  const dup = driverError({ code: 'ER_DUP_ENTRY' });
  t.false(isDatabaseUnavailable(new Error('wrapped', { cause: dup })));
});

test('deadlocks, server wait timeouts, row contention and constraint violations are told apart', (t) => {
  const e = driverError;
  const wrapped = (fields: Record<string, unknown>) =>
    Object.assign(new Error('objection'), { nativeError: e(fields) });
  // isDeadlockVictim: what is run again (retryDeadlocks, the placements); a wait that timed out is not
  t.true(isDeadlockVictim(e({ code: 'ER_LOCK_DEADLOCK' })));
  t.true(isDeadlockVictim(wrapped({ code: 'ER_LOCK_DEADLOCK' })));
  for (const fields of [
    { code: 'ER_LOCK_WAIT_TIMEOUT' },
    { code: 'SQLITE_BUSY' },
    { code: 'ER_DUP_ENTRY' },
  ]) {
    t.false(isDeadlockVictim(e(fields)), JSON.stringify(fields));
    t.false(isDeadlockVictim(wrapped(fields)), JSON.stringify(fields));
  }
  // isServerWaitTimeout: the server answered (it is reachable) that the statement waited too long
  for (const fields of [
    { code: 'ER_LOCK_WAIT_TIMEOUT' },
    { code: 'ER_STATEMENT_TIMEOUT' },
    { code: 'ER_QUERY_TIMEOUT' },
    { errno: 1969 },
  ]) {
    t.true(isServerWaitTimeout(e(fields)), JSON.stringify(fields));
    t.true(isRowContention(e(fields)), JSON.stringify(fields));
  }
  t.false(isServerWaitTimeout(e({ code: 'ER_LOCK_DEADLOCK' })));
  t.true(isRowContention(e({ code: 'ER_LOCK_DEADLOCK' })), 'a deadlock victim is contention on rows');
  t.true(isRowContention(wrapped({ code: 'ER_LOCK_DEADLOCK' })));
  t.false(isRowContention(e({ code: 'PROTOCOL_CONNECTION_LOST' })), 'a lost connection is not contention');
  t.false(isRowContention(e({ code: 'SQLITE_BUSY' })));
  // constraint violations
  for (const code of ['ER_DUP_ENTRY', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']) {
    t.true(isUniqueViolation(wrapped({ code })), code);
  }
  t.false(isUniqueViolation(e({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' })));
  for (const code of ['ER_NO_REFERENCED_ROW_2', 'SQLITE_CONSTRAINT_FOREIGNKEY']) {
    t.true(isForeignKeyViolation(wrapped({ code })), code);
  }
  t.false(isForeignKeyViolation(e({ code: 'SQLITE_CONSTRAINT_UNIQUE' })));
});

test('retryDeadlocks runs a deadlock victim 3 times in all by default, then lets the error go', async (t) => {
  let runs = 0;
  const err = await t.throwsAsync(
    retryDeadlocks(async () => {
      runs += 1;
      throw driverError({ code: 'ER_LOCK_DEADLOCK' });
    }),
  );
  t.is((err as Error & { code?: string }).code, 'ER_LOCK_DEADLOCK');
  t.is(runs, 3);
  let third = 0;
  t.is(
    await retryDeadlocks(async () => {
      third += 1;
      if (third < 3) throw driverError({ code: 'ER_LOCK_DEADLOCK' });
      return 'written';
    }),
    'written',
    'the third run may still succeed',
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Session limits of a pooled connection

test('each pooled connection gets the statement limit: SQLite busy timeout; MariaDB lock wait (whole seconds, rounded up) and statement time', async (t) => {
  const database = await createTestDatabase();
  const config = testConfig(database.env);
  const db = createDb(config.database, { connectMs: 2_000, acquireMs: 2_000, statementMs: 1_500 });
  try {
    if (DB_KIND === 'sqlite') {
      const [busy] = (await db.raw('PRAGMA busy_timeout')) as Array<{ timeout: number }>;
      t.is(busy.timeout, 1_500);
      const [sync] = (await db.raw('PRAGMA synchronous')) as Array<{ synchronous: number }>;
      t.is(sync.synchronous, 1, 'synchronous = NORMAL');
      const [journal] = (await db.raw('PRAGMA journal_mode')) as Array<{ journal_mode: string }>;
      t.is(journal.journal_mode, 'wal');
      const [fk] = (await db.raw('PRAGMA foreign_keys')) as Array<{ foreign_keys: number }>;
      t.is(fk.foreign_keys, 1);
    } else {
      const [[row]] = (await db.raw(
        'SELECT @@SESSION.innodb_lock_wait_timeout AS lockWait, @@SESSION.max_statement_time AS statementTime',
      )) as [Array<{ lockWait: number | string; statementTime: number | string }>];
      t.is(Number(row.lockWait), 2, '1.5 s rounds up to 2 s');
      t.is(Number(row.statementTime), 1.5, 'max_statement_time is in seconds');
    }
  } finally {
    await db.destroy();
    await database.drop();
  }
});

const mysqlOnly = DB_KIND === 'mysql' ? test : test.skip;

mysqlOnly(
  "a connection whose handshake id is not the server's own thread id (as through a proxy) gets no place: nothing is ever killed by it",
  async (t) => {
    const database = await createTestDatabase();
    const timeouts = { connectMs: 2_000, acquireMs: 2_000, statementMs: 1_000 };
    const open = () =>
      new Promise<mysql.Connection>((resolve, reject) => {
        const conn = mysql.createConnection(database.env.DATABASE_URL);
        conn.connect((err) => (err ? reject(err) : resolve(conn)));
      });
    const direct = await open();
    const proxied = await open();
    try {
      await limitMysqlConnection(direct as never, timeouts);
      t.truthy(placeOf(direct), 'a direct connection knows its place');
      // A proxy answers the handshake with an id of its own: the server's id for the connection differs.
      proxied.threadId = (proxied.threadId ?? 0) + 100_000;
      await limitMysqlConnection(proxied as never, timeouts);
      t.is(placeOf(proxied), undefined);
    } finally {
      direct.destroy();
      proxied.destroy();
      await database.drop();
    }
  },
);
