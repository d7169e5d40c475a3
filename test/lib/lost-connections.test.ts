// Ending a lost connection on the server (lib/lost-connections.ts), on real MariaDB: the KILL
// reaches the named thread and only it, is sent only to the server the lost connection was on (as that server
// names itself), and a thread already gone is reported as such. A pool without the session limits (no server
// recorded for its connections) never kills anything.
import test from 'ava';
import knexFactory, { type Knex } from 'knex';
import { createDb, knexConfig } from '../../lib/db';
import { endServerConnection } from '../../lib/lost-connections';
import { serverOf } from '../../lib/db-timeouts';
import { createTestDatabase, DB_KIND, testConfig, type TestDatabase } from '../helpers/harness';

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

/** The server's id of `other`'s one connection, and whether that connection still answers. */
async function victimId(): Promise<number> {
  const [rows] = (await other.raw('SELECT CONNECTION_ID() AS id')) as [Array<{ id: number | string }>];
  return Number(rows[0].id);
}
const alive = async (threadId: number) => {
  const [rows] = (await db.raw('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?', [
    threadId,
  ])) as [Array<{ n: number | string }>];
  return Number(rows[0].n) === 1;
};

async function serverName(): Promise<string> {
  const connection = (await (
    db.client as { acquireConnection(): Promise<object> }
  ).acquireConnection()) as object;
  try {
    return serverOf(connection)!;
  } finally {
    await (db.client as { releaseConnection(c: object): Promise<unknown> }).releaseConnection(connection);
  }
}

mysqlOnly('each pooled connection knows its server as the server names itself', async (t) => {
  const [rows] = (await db.raw('SELECT @@hostname AS host, @@port AS port')) as [
    Array<{ host: string; port: number | string }>,
  ];
  t.is(await serverName(), `${rows[0].host}:${rows[0].port}`);
});

mysqlOnly(
  'a lost connection on another server, or a pool that does not know its server, sends nothing',
  async (t) => {
    const threadId = await victimId();
    t.is(await endServerConnection(db, { threadId, server: 'another-server:3306' }), 'elsewhere');
    t.true(await alive(threadId));
    // A pool without the session limits records no server for its connections: it never sends a KILL.
    const [rows] = (await db.raw('SELECT CONNECTION_ID() AS id')) as [Array<{ id: number | string }>];
    const bystander = Number(rows[0].id);
    t.is(await endServerConnection(other, { threadId: bystander, server: await serverName() }), 'elsewhere');
    t.true(await alive(bystander));
    t.is(await victimId(), threadId, 'the connection still answers');
  },
);

mysqlOnly('a lost connection on this server is ended; one already gone is reported as gone', async (t) => {
  const threadId = await victimId();
  const server = await serverName();
  t.is(await endServerConnection(db, { threadId, server }), 'ended');
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) {
    gone = !(await alive(threadId));
    if (!gone) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.true(gone, 'the thread left the process list');
  t.is(await endServerConnection(db, { threadId, server }), 'gone');
  t.is(typeof (await victimId()), 'number', 'the other pool replaced its killed connection');
});
