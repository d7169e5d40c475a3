// Connections this side gave up inside a transaction (a statement got no answer, or the link failed) may live on at
// the server: when the server never learned of the loss (a half-open connection: a middlebox lost its state, a
// partition), it keeps the transaction open, with its row locks (a hot product's), until its wait_timeout (8 hours
// by default). Such a connection is ended on the server with `KILL CONNECTION` (a user may end its own connections
// without any privilege), sent only to the server it was on, as that server names itself, and only while the id is
// still that connection's (db-timeouts' placeOf).
// MySQL/MariaDB only: SQLite is in-process and records no server.
import type { Knex } from 'knex';
import { placeOf, type ConnectionPlace } from './db-timeouts';
import type { Logger } from './logger';

/** A connection this side gave up: where it is, and the server's id for it. */
export interface LostConnection extends ConnectionPlace {
  threadId: number;
}

interface PoolClient {
  acquireConnection(): Promise<object>;
  releaseConnection(connection: object): Promise<unknown>;
  validateConnection(connection: object): boolean;
}

/**
 * The connection a transaction ran on, once this side gave it up (the pool discards it: knex's own
 * `validateConnection` says so after a timed-out query or a lost link). Null while it is usable (it went back to
 * the pool and may run other work), and when its server is not known (SQLite; a pool without the session limits).
 * Read through knex's transaction client, which hands out its one connection.
 */
export async function lostServerConnection(trx: Knex.Transaction): Promise<LostConnection | null> {
  const client = (trx as unknown as { client: PoolClient }).client;
  const connection = (await client.acquireConnection().catch(() => null)) as { threadId?: unknown } | null;
  if (!connection || client.validateConnection(connection)) return null;
  const place = placeOf(connection);
  if (typeof connection.threadId !== 'number' || place === undefined) return null;
  return { threadId: connection.threadId, ...place };
}

/**
 * Ends a lost connection's server side: its open transaction is rolled back, unless its COMMIT applied first. Sent
 * on a pooled connection to the same server only, and only while the server lists that id for the same client end:
 * `ended`, `gone` (it had ended already, or its id is another connection's now, as after a restart), or `elsewhere`
 * (the pool's connection is on another server; nothing was sent). Throws when the database cannot be reached.
 */
export async function endServerConnection(
  db: Knex,
  lost: LostConnection,
): Promise<'ended' | 'gone' | 'elsewhere'> {
  const client = db.client as unknown as PoolClient;
  const connection = await client.acquireConnection();
  try {
    if (placeOf(connection)?.server !== lost.server) return 'elsewhere';
    const [rows] = (await db
      .raw('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ? AND HOST = ?', [
        lost.threadId,
        lost.client,
      ])
      .connection(connection)) as [Array<{ n: number | string }>];
    if (Number(rows[0]?.n) === 0) return 'gone';
    await db.raw('KILL CONNECTION ?', [lost.threadId]).connection(connection);
    return 'ended';
  } catch (err) {
    if ((err as { code?: unknown })?.code === 'ER_NO_SUCH_THREAD') return 'gone';
    throw err;
  } finally {
    await client.releaseConnection(connection);
  }
}

/** How long a lost connection that could not be ended yet is tried again (backoff from 1 s to 30 s). */
const END_LOST_WITHIN_MS = 5 * 60_000;
/** Lost connections being tried again in the background (`server#threadId`): one loop each. */
const endingLater = new Set<string>();

/**
 * Ends a lost connection on the server (`endServerConnection`). Resolves true once the server holds it no more;
 * false when this try failed (unreachable, or the pool's connection was on another server), and then it is tried
 * again in the background for up to END_LOST_WITHIN_MS, after which the server's own timeouts are left to end it.
 */
export async function endLost(db: Knex, lost: LostConnection, log: Logger): Promise<boolean> {
  const once = async (): Promise<boolean> => {
    // The pool was closed (the service stops): nothing to send it with; the server's own timeouts are left to end it.
    if (!(db.client as { pool?: unknown }).pool) return true;
    try {
      const result = await endServerConnection(db, lost);
      if (result === 'ended') log.warn(`Ended a lost connection on the server (thread ${lost.threadId})`);
      return result !== 'elsewhere';
    } catch {
      return false;
    }
  };
  if (await once()) return true;
  const key = `${lost.server}#${lost.threadId}`;
  if (!endingLater.has(key)) {
    endingLater.add(key);
    log.warn(
      `A lost connection (thread ${lost.threadId}) could not be ended on the server yet; trying again`,
    );
    const started = Date.now();
    const later = (delayMs: number) => {
      setTimeout(() => {
        void once().then((done) => {
          if (done) endingLater.delete(key);
          else if (Date.now() - started + delayMs > END_LOST_WITHIN_MS) {
            endingLater.delete(key);
            log.error(`A lost connection (thread ${lost.threadId}) could not be ended on the server`);
          } else later(Math.min(delayMs * 2, 30_000));
        });
      }, delayMs).unref();
    };
    later(1_000);
  }
  return false;
}
