// Ending a lost connection on the server (lib/lost-connections.ts), on real MariaDB: the KILL
// reaches the named thread and only it, is sent only to the server the lost connection was on (as that server
// names itself) and only while the id is still that client's, and a thread already gone is reported as such. A pool without the session limits (no server
// recorded for its connections) never kills anything.
import test, { type ExecutionContext } from 'ava';
import knexFactory, { type Knex } from 'knex';
import { createDb, knexConfig } from '../../lib/db';
import { endLost, endLostLater, endServerConnection, endWaitingLost } from '../../lib/lost-connections';
import { createLogger } from '../../lib/logger';
import { startTcpProxy } from '../helpers/tcp-proxy';
import { placeOf, type ConnectionPlace } from '../../lib/db-timeouts';
import {
  createTestDatabase,
  DB_KIND,
  LogCollector,
  startTestApp,
  testConfig,
  type TestDatabase,
} from '../helpers/harness';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

let database: TestDatabase;
let db: Knex; // the service's pool: session limits and the server of each connection recorded
let other: Knex; // a second pool whose connections stand for the lost ones

test.before(async () => {
  if (DB_KIND !== 'mysql') return;
  database = await createTestDatabase();
  const config = testConfig(database.env);
  db = createDb(config.database, config.dbTimeouts);
  other = knexFactory({ ...knexConfig(config.database), pool: { min: 0, max: 1 } });
});
test.after.always(async () => {
  await db?.destroy();
  await other?.destroy();
  await database?.drop();
});

/** The server's id of `other`'s one connection (it stands for a lost one), and its client end as the server shows it. */
async function victim(): Promise<{ threadId: number; client: string }> {
  const [rows] = (await other.raw(
    'SELECT ID AS id, HOST AS client FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()',
  )) as [Array<{ id: number | string; client: string }>];
  return { threadId: Number(rows[0].id), client: rows[0].client };
}
const alive = async (threadId: number) => {
  const [rows] = (await db.raw('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?', [
    threadId,
  ])) as [Array<{ n: number | string }>];
  return Number(rows[0].n) === 1;
};

/** Whether the thread leaves the process list within `withinMs` (a KILL's thread may linger for a moment). */
async function leaves(threadId: number, withinMs = 2000): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline;) {
    if (!(await alive(threadId))) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return !(await alive(threadId));
}

/** Where the service pool's connections are. */
async function place(): Promise<ConnectionPlace> {
  const client = db.client as {
    acquireConnection(): Promise<object>;
    releaseConnection(c: object): Promise<unknown>;
  };
  const connection = await client.acquireConnection();
  try {
    return placeOf(connection)!;
  } finally {
    await client.releaseConnection(connection);
  }
}

mysqlOnly(
  'each pooled connection knows its server as the server names itself, and its own client end',
  async (t) => {
    const [rows] = (await db.raw(
      'SELECT @@hostname AS host, @@port AS port, ' +
        '(SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()) AS client',
    )) as [Array<{ host: string; port: number | string; client: string }>];
    const where = await place();
    t.is(where.server, `${rows[0].host}:${rows[0].port}`);
    t.regex(where.client, /^127\.0\.0\.1:\d+$/);
  },
);

mysqlOnly(
  'a lost connection on another server, or a pool that does not know its server, sends nothing',
  async (t) => {
    const { threadId, client } = await victim();
    t.is(await endServerConnection(db, { threadId, client, server: 'another-server:3306' }), 'elsewhere');
    t.true(await alive(threadId));
    // A pool without the session limits records no place for its connections: it never sends a KILL.
    t.is(await endServerConnection(other, { threadId, client, server: (await place()).server }), 'elsewhere');
    t.true(await alive(threadId));
  },
);

mysqlOnly(
  'an id the server now gives another client (as after a restart) is reported gone and left alone',
  async (t) => {
    const { threadId } = await victim();
    const { server } = await place();
    t.is(await endServerConnection(db, { threadId, server, client: '127.0.0.1:1' }), 'gone');
    t.true(await alive(threadId));
    t.is((await victim()).threadId, threadId, 'the connection still answers');
  },
);

mysqlOnly('a lost connection on this server is ended; one already gone is reported as gone', async (t) => {
  const lost = { ...(await victim()), server: (await place()).server };
  t.is(await endServerConnection(db, lost), 'ended');
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) {
    gone = !(await alive(lost.threadId));
    if (!gone) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.true(gone, 'the thread left the process list');
  t.is(await endServerConnection(db, lost), 'gone');
  t.not((await victim()).threadId, lost.threadId, 'the other pool replaced its ended connection');
});

mysqlOnly(
  'ending a lost connection the server holds no more is done at once: nothing is tried again',
  async (t) => {
    const out = new LogCollector();
    const log = createLogger({ level: 'info', format: 'line', out });
    const { threadId } = await victim();
    const lost = { threadId, client: '127.0.0.1:1', server: (await place()).server }; // that id is another client's
    t.true(await endLost(db, lost, log), 'gone counts as ended');
    t.true(await alive(threadId), 'the other client is left alone');
    t.notRegex(out.text, /could not be ended/);
  },
);

/**
 * A pool that reaches MariaDB through a proxy, and a lost connection (`other`'s) whose first end cannot be sent:
 * the proxy refuses every new connection and cuts the pool's. `close()` ends the pool and the proxy.
 */
async function lostBehindRefusingProxy(t: ExecutionContext) {
  const proxy = await startTcpProxy({
    host: '127.0.0.1',
    port: Number(new URL(database.env.DATABASE_URL).port || 3306),
  });
  const config = testConfig({ ...database.env, DATABASE_URL: proxy.urlFor(database.env.DATABASE_URL) });
  const viaProxy = createDb(config.database, { connectMs: 500, acquireMs: 1000, statementMs: 1000 });
  const out = new LogCollector();
  const log = createLogger({ level: 'info', format: 'line', out });
  const close = async () => {
    await viaProxy.destroy();
    await proxy.close();
  };
  try {
    await viaProxy.raw('SELECT 1'); // a pooled connection that knows where it is
    const lost = { ...(await victim()), server: (await place()).server };
    proxy.refuse();
    proxy.cutAll();
    t.false(await endLost(viaProxy, lost, log), 'the first try cannot reach the database');
    return { proxy, viaProxy, out, lost, close };
  } catch (err) {
    await close();
    throw err;
  }
}

mysqlOnly(
  'a lost connection that cannot be ended yet (the database refuses connections) is ended once it can be',
  async (t) => {
    // The service's pool reaches MariaDB through a proxy that refuses every connection for a while.
    const { proxy, out, lost, close } = await lostBehindRefusingProxy(t);
    try {
      t.true(await alive(lost.threadId));
      setTimeout(() => proxy.pass(), 1_500);
      let gone = false;
      for (let i = 0; i < 100 && !gone; i++) {
        gone = !(await alive(lost.threadId));
        if (!gone) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      t.true(gone, 'ended by a later try in the background');
      t.regex(
        out.text,
        /A lost connection \(thread \d+\) could not be ended on the server yet; trying again/,
      );
      t.regex(out.text, /Ended a lost connection on the server \(thread \d+\)/);
    } finally {
      await close();
    }
  },
);

mysqlOnly(
  'a lost connection still waiting for its end is ended when the service stops, not dropped with the pool',
  async (t) => {
    const app = await startTestApp({ database, logLevel: 'warn' });
    const lost = { ...(await victim()), server: (await place()).server };
    // What the query wrapper does after an unanswered COMMIT: the end waits (here far longer than the test).
    endLostLater(app.db, lost, 60_000, app.logger);
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.true(await alive(lost.threadId), 'still waiting');
    await app.close();
    t.regex(app.logs.text, new RegExp(`Ended a lost connection on the server \\(thread ${lost.threadId}\\)`));
    t.true(await leaves(lost.threadId));
  },
);

mysqlOnly(
  "a lost connection waiting for a retry's backoff is tried at once when its pool closes",
  async (t) => {
    const { proxy, viaProxy, out, lost, close } = await lostBehindRefusingProxy(t);
    try {
      proxy.pass();
      // The next background try is 1 s away; closing comes first and does not wait for it.
      const started = Date.now();
      await endWaitingLost(viaProxy);
      t.true(Date.now() - started < 900, `closing took ${Date.now() - started} ms`);
      t.regex(out.text, new RegExp(`Ended a lost connection on the server \\(thread ${lost.threadId}\\)`));
      t.true(await leaves(lost.threadId));
      // Closed, the pool has nothing left to end: its background try finds nothing to do.
      await viaProxy.destroy();
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      t.is(out.text.match(/Ended a lost connection/g)?.length, 1);
    } finally {
      await close();
    }
  },
);
