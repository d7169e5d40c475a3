// Driver errors from the real drivers, each kind: which mean "database unavailable" (503), and that the
// message kept for logs and the outbox has no SQL text and no bound values. knex is used here with its
// default compileSqlOnError, so its messages do carry the values: the redaction must remove them itself.
import net from 'node:net';
import test, { type ExecutionContext } from 'ava';
import knexFactory, { type Knex } from 'knex';
import { Model } from 'objection';
import { createDb, knexConfig, retryDeadlocks } from '../../lib/db';
import { isDatabaseUnavailable, safeErrorMessage, toClientError } from '../../lib/db-errors';
import { ServiceUnavailableError } from '../../lib/errors';
import { createLogger } from '../../lib/logger';
import { createNotificationDispatcher } from '../../lib/notifications/dispatcher';
import { writeOutbox } from '../../lib/notifications/outbox';
import { createTestDatabase, DB_KIND, LogCollector, testConfig, type TestDatabase } from '../helpers/harness';
import { startTcpProxy } from '../helpers/tcp-proxy';

const SECRET = '$2b$04$SECRETHASHVALUEabcdefghijklmnopqrstuv';

let database: TestDatabase;
let db: Knex;
test.before(async () => {
  database = await createTestDatabase();
  const config = knexConfig(testConfig(database.env).database);
  delete config.compileSqlOnError; // knex's default: values in the message
  db = knexFactory(config);
  await db.migrate.latest();
});
test.after.always(async () => {
  await db?.destroy();
  await database?.drop();
});

function assertSafe(t: ExecutionContext, err: unknown, code: RegExp): string {
  t.true(err instanceof Error, String(err));
  const message = safeErrorMessage(err);
  t.regex(message, code);
  t.false(message.includes('SECRETHASHVALUE'), message);
  t.notRegex(message, /insert into|select |update `|values \(/i, message);
  const out = new LogCollector();
  createLogger({ level: 'info', format: 'json', out }).error({ err }, 'failed');
  t.false(out.text.includes('SECRETHASHVALUE'), out.text);
  t.notRegex(out.text, /insert into|select \?|values \(/i, out.text);
  return message;
}

const memberRow = (email: string) => ({
  email,
  password_hash: SECRET,
  name: 'n',
  phone: 'p',
  role: 'BUYER',
  created_at: new Date(),
  updated_at: new Date(),
});

test.serial(
  'a constraint error (knex and Objection-wrapped): code and driver message, no values; not "unavailable"',
  async (t) => {
    await db('members').insert(memberRow('dup@x.test'));
    const knexErr = await db('members')
      .insert({ ...memberRow('dup@x.test'), password_hash: SECRET })
      .catch((err: unknown) => err);
    class Members extends Model {
      static tableName = 'members';
    }
    const objectionErr = await Members.query(db)
      .insert(memberRow('dup@x.test'))
      .catch((err: unknown) => err);
    for (const err of [knexErr, objectionErr]) {
      t.regex((err as Error).message, /SECRETHASHVALUE/, 'knex did put the value in its message');
      const message = assertSafe(t, err, /^(ER_DUP_ENTRY|SQLITE_CONSTRAINT_UNIQUE): /);
      t.false(message.includes('dup@x.test'), message);
      t.false(isDatabaseUnavailable(err));
      t.is(toClientError(err), err);
    }
  },
);

test.serial('a syntax error: the SQL quoted "near" the error is removed', async (t) => {
  const err = await db.raw(`selec ?`, [SECRET]).catch((e: unknown) => e);
  assertSafe(t, err, /^(ER_PARSE_ERROR|SQLITE_ERROR): /);
  t.false(isDatabaseUnavailable(err));
});

test.serial('plain errors keep their message and are not database errors', (t) => {
  const err = new Error('a plain - message');
  t.is(safeErrorMessage(err), 'a plain - message');
  t.false(isDatabaseUnavailable(err));
  t.is(safeErrorMessage('text'), 'text');
});

test.serial('the outbox stores a failed delivery as code and driver message, without the SQL', async (t) => {
  const [member] = await db('members').insert(memberRow('outbox@x.test'));
  await db.transaction((trx) =>
    writeOutbox(
      trx,
      [
        {
          type: 'OrderCreated',
          recipientId: Number(member),
          // a value that lands in the failing INSERT's bindings
          payload: { sellerId: Number(member), orderId: 1, orderNumber: SECRET },
        },
      ],
      new Date(),
      'req-1',
    ),
  );
  const dispatcher = createNotificationDispatcher({
    db,
    logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
    baseBackoffMs: 60_000,
  });
  await db.schema.renameTable('notifications', 'notifications_away');
  try {
    const failed = dispatcher.events.once('failed');
    dispatcher.start();
    const { error } = await failed;
    const row = await db('notification_outbox').where('recipient_id', member).first();
    t.is(row.last_error, error);
    t.regex(row.last_error, /^(ER_NO_SUCH_TABLE|SQLITE_ERROR): /);
    t.notRegex(row.last_error, /insert into|SECRETHASHVALUE/i);
  } finally {
    await dispatcher.stop();
    await db.schema.renameTable('notifications_away', 'notifications');
  }
});

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

mysqlOnly('connection refused: ECONNREFUSED is "unavailable" -> 503 with Retry-After', async (t) => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const refused = createDb({ client: 'mysql', url: `mysql://root@127.0.0.1:${port}/x`, poolMax: 1 });
  try {
    const err = await refused('members')
      .insert(memberRow('r@x.test'))
      .catch((e: unknown) => e);
    assertSafe(t, err, /^ECONNREFUSED: /);
    t.true(isDatabaseUnavailable(err));
    const client = toClientError(err);
    t.true(client instanceof ServiceUnavailableError);
    t.is((client as ServiceUnavailableError).details?.headers?.['Retry-After'], '5');
    t.deepEqual((client as ServiceUnavailableError).details?.headers, { 'Retry-After': '5' });
  } finally {
    await refused.destroy();
  }
});

mysqlOnly(
  'connection lost mid-query, query timeout, acquire timeout, lock wait timeout: all "unavailable", none leaks',
  async (t) => {
    const url = new URL(database.env.DATABASE_URL);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(url.port || 3306) });
    const config = testConfig({ ...database.env, DATABASE_URL: proxy.urlFor(database.env.DATABASE_URL) });
    const timeouts = { connectMs: 500, acquireMs: 500, statementMs: 1000 };
    const viaProxy = knexFactory({
      ...knexConfig(config.database, timeouts),
      compileSqlOnError: true,
      pool: { ...knexConfig(config.database, timeouts).pool, max: 1 },
    });
    try {
      await viaProxy.raw('select 1'); // a pooled connection with the session limits

      // lost: the connection is cut when the INSERT goes out
      const cut = proxy.cutOn('insert into `members`', { forward: false });
      const lost = await viaProxy('members')
        .insert(memberRow('lost@x.test'))
        .catch((e: unknown) => e);
      await cut;
      assertSafe(t, lost, /^(PROTOCOL_CONNECTION_LOST|ECONNRESET): /);
      t.true(isDatabaseUnavailable(lost));

      // lock wait: another transaction holds the row; the server gives up after innodb_lock_wait_timeout (1 s)
      const [id] = await db('members').insert(memberRow('locked@x.test'));
      const holder = await db.transaction();
      try {
        await holder('members').where('id', id).forUpdate().first();
        const started = Date.now();
        const waited = await viaProxy('members')
          .where('id', id)
          .update({ password_hash: SECRET })
          .catch((e: unknown) => e);
        t.true(Date.now() - started < 3_000, `lock wait ended after ${Date.now() - started} ms`);
        assertSafe(t, waited, /^(ER_LOCK_WAIT_TIMEOUT|ER_STATEMENT_TIMEOUT): /);
        t.true(isDatabaseUnavailable(waited));

        // acquire: the only pooled connection is busy (waiting for the lock) past acquireConnectionTimeout
        const busy = viaProxy('members')
          .where('id', id)
          .update({ name: 'x' })
          .catch((e: unknown) => e);
        const acquire = await viaProxy('members')
          .where('password_hash', SECRET)
          .first()
          .catch((e: unknown) => e);
        assertSafe(t, acquire, /^KnexTimeoutError: /);
        t.true(isDatabaseUnavailable(acquire));
        await busy;
      } finally {
        await holder.rollback();
      }

      // black-holed: the server never answers; the client-side limit (statement + 1 s) ends the query
      proxy.blackhole();
      const started = Date.now();
      const silent = await viaProxy('members')
        .where('password_hash', SECRET)
        .first()
        .catch((e: unknown) => e);
      t.true(Date.now() - started < 3_000, `black-holed query ended after ${Date.now() - started} ms`);
      assertSafe(t, silent, /^(PROTOCOL_SEQUENCE_TIMEOUT|ETIMEDOUT): /);
      t.true(isDatabaseUnavailable(silent));
    } finally {
      proxy.pass();
      await viaProxy.destroy();
      await proxy.close();
    }
  },
);

mysqlOnly(
  'a server that cannot store (a full table, a statement its options forbid, as read_only does) is "unavailable"',
  async (t) => {
    // ER_RECORD_FILE_FULL (1114): a MEMORY table at its session's size limit, as a full tablespace answers.
    const full = await db
      .transaction(async (trx) => {
        await trx.raw('SET SESSION max_heap_table_size = 16384');
        await trx.raw('CREATE TEMPORARY TABLE filling (x VARCHAR(200)) ENGINE=MEMORY');
        for (let i = 0; i < 10_000; i++) await trx.raw('INSERT INTO filling VALUES (?)', ['x'.repeat(200)]);
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assertSafe(t, full, /^ER_RECORD_FILE_FULL: /);
    t.true(isDatabaseUnavailable(full));
    // ER_OPTION_PREVENTS_STATEMENT (1290), which a read_only server answers every write with (read_only itself is
    // global, so the shared test server shows the same error through --secure-file-priv instead).
    const prevented = await db.raw(`SELECT 1 INTO OUTFILE '/nonexistent-dir/x.txt'`).catch((e: unknown) => e);
    assertSafe(t, prevented, /^ER_OPTION_PREVENTS_STATEMENT: /);
    t.true(isDatabaseUnavailable(prevented));
    const client = toClientError(prevented);
    t.true(client instanceof ServiceUnavailableError);
    t.is((client as ServiceUnavailableError).retryAfterSeconds, 5);
  },
);

const sqliteOnly = DB_KIND === 'sqlite' ? test.serial : test.skip;

sqliteOnly(
  'SQLite: a file that cannot grow (SQLITE_FULL) or is opened read-only (SQLITE_READONLY) is "unavailable"',
  async (t) => {
    const config = testConfig(database.env);
    if (config.database.client !== 'sqlite') throw new Error('SQLite expected');
    const readOnly = knexFactory({
      client: 'better-sqlite3',
      connection: { filename: config.database.filename, options: { readonly: true } },
      useNullAsDefault: true,
    });
    try {
      const refused = await readOnly('members')
        .insert(memberRow('readonly@x.test'))
        .catch((e: unknown) => e);
      assertSafe(t, refused, /^SQLITE_READONLY: /);
      t.true(isDatabaseUnavailable(refused));
    } finally {
      await readOnly.destroy();
    }
    const [{ page_count: pages }] = (await db.raw('PRAGMA page_count')) as Array<{ page_count: number }>;
    await db.raw(`PRAGMA max_page_count = ${pages}`);
    try {
      let full: unknown = null;
      for (let i = 0; i < 10_000 && !full; i++)
        full = await db('members')
          .insert(memberRow(`full-${i}@x.test`))
          .then(
            () => null,
            (e: unknown) => e,
          );
      assertSafe(t, full, /^SQLITE_FULL: /);
      t.true(isDatabaseUnavailable(full));
      t.true(toClientError(full) instanceof ServiceUnavailableError);
    } finally {
      await db.raw('PRAGMA max_page_count = 1073741823');
    }
  },
);

sqliteOnly('SQLite: a write lock held past the busy timeout is SQLITE_BUSY, "unavailable"', async (t) => {
  const config = testConfig(database.env);
  const other = createDb(config.database, { connectMs: 100, acquireMs: 100, statementMs: 200 });
  const holder = await db.transaction();
  try {
    await holder('members').insert(memberRow('holder@x.test')); // takes the write lock
    const started = Date.now();
    const busy = await other('members')
      .insert(memberRow('busy@x.test'))
      .catch((e: unknown) => e);
    t.true(Date.now() - started < 2_000);
    assertSafe(t, busy, /^SQLITE_BUSY: /);
    t.true(isDatabaseUnavailable(busy));
  } finally {
    await holder.rollback();
    await other.destroy();
  }
});

/**
 * Two transactions that each lock their own member row, wait for each other, then update the other's row: a
 * real InnoDB deadlock, of which MariaDB rolls back one. `attempt` counts the runs of each side; only the first
 * run of each waits at the barrier (a retry runs after the other side is done).
 */
function crossLockers(ids: [number, number]) {
  let arrived = 0;
  let bothLocked!: () => void;
  const barrier = new Promise<void>((resolve) => (bothLocked = resolve));
  const attempts = [0, 0];
  const side = (mine: 0 | 1) => () =>
    db.transaction(async (trx) => {
      attempts[mine]++;
      await trx('members').where('id', ids[mine]).increment('token_version', 1);
      if (attempts[mine] === 1) {
        if (++arrived === 2) bothLocked();
        await barrier;
      }
      await trx('members')
        .where('id', ids[1 - mine])
        .increment('token_version', 1);
    });
  return { sides: [side(0), side(1)] as const, attempts };
}

mysqlOnly(
  'a deadlock victim is "unavailable" (503 with Retry-After, not 500); retryDeadlocks runs it again',
  async (t) => {
    const ids: [number, number] = [
      (await db('members').insert(memberRow('deadlock-a@x.test')))[0],
      (await db('members').insert(memberRow('deadlock-b@x.test')))[0],
    ];
    const versions = async () =>
      (await db('members').whereIn('id', ids).orderBy('id').select('token_version')).map(
        (r) => r.token_version,
      );
    const before = await versions();

    // Without a retry: one side is the victim.
    const plain = crossLockers(ids);
    const outcomes = await Promise.allSettled(plain.sides.map((run) => run()));
    const victims = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    t.is(victims.length, 1, JSON.stringify(outcomes.map((o) => o.status)));
    const victim = victims[0].reason;
    assertSafe(t, victim, /^ER_LOCK_DEADLOCK: /);
    t.true(isDatabaseUnavailable(victim));
    const client = toClientError(victim);
    t.true(client instanceof ServiceUnavailableError);
    t.is((client as ServiceUnavailableError).details?.headers?.['Retry-After'], '5');
    t.deepEqual(
      await versions(),
      before.map((v) => v + 1),
      'only the survivor wrote',
    );

    // With retryDeadlocks: the victim runs again and both sides are written.
    const retried = crossLockers(ids);
    await Promise.all(retried.sides.map((run) => retryDeadlocks(run)));
    t.deepEqual([...retried.attempts].sort(), [1, 2], 'the victim ran twice');
    t.deepEqual(
      await versions(),
      before.map((v) => v + 3),
    );
  },
);

test('retryDeadlocks: only deadlock victims run again; busy and lock wait timeouts, which already waited, do not', async (t) => {
  const failingOnce = (code: string) => {
    let runs = 0;
    return {
      runs: () => runs,
      work: async () => {
        runs += 1;
        if (runs === 1) throw Object.assign(new Error(code), { code });
        return 'done';
      },
    };
  };
  const busy = failingOnce('SQLITE_BUSY');
  await t.throwsAsync(retryDeadlocks(busy.work), { message: 'SQLITE_BUSY' });
  t.is(busy.runs(), 1);
  const waited = failingOnce('ER_LOCK_WAIT_TIMEOUT');
  await t.throwsAsync(retryDeadlocks(waited.work, 10), { message: 'ER_LOCK_WAIT_TIMEOUT' });
  t.is(waited.runs(), 1);
  const victim = failingOnce('ER_LOCK_DEADLOCK');
  t.is(await retryDeadlocks(victim.work), 'done');
  t.is(victim.runs(), 2);
  let always = 0;
  const err = await t.throwsAsync(
    retryDeadlocks(async () => {
      always += 1;
      throw Object.assign(new Error('again'), { code: 'ER_LOCK_DEADLOCK' });
    }, 3),
  );
  t.is(err?.message, 'again');
  t.is(always, 3, 'gives up after `attempts` runs');
});
