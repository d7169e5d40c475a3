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

/** A lost connection not ended yet: waiting for its first try (`endLostLater`) or for a retry, or being tried. */
interface Waiting {
  lost: LostConnection;
  log: Logger;
  /** Null while a try runs. */
  timer: NodeJS.Timeout | null;
}

/** Per pool, the lost connections it has still to end (`server#threadId`): one entry, one loop each. */
const waitingByPool = new WeakMap<Knex, Map<string, Waiting>>();
/** Per pool, the tries under way (the pool's close waits for them). */
const triesByPool = new WeakMap<Knex, Set<Promise<boolean>>>();

const keyOf = (lost: LostConnection) => `${lost.server}#${lost.threadId}`;

function waitingOf(db: Knex): Map<string, Waiting> {
  let waiting = waitingByPool.get(db);
  if (!waiting) waitingByPool.set(db, (waiting = new Map()));
  return waiting;
}

/**
 * One try (`endServerConnection`): true once the server holds the connection no more, or when there is nothing left
 * to send it with (the pool was closed: the server's own timeouts are left to end it).
 */
function tryEnd(db: Knex, lost: LostConnection, log: Logger): Promise<boolean> {
  if (!(db.client as { pool?: unknown }).pool) return Promise.resolve(true);
  const attempt = endServerConnection(db, lost).then(
    (result) => {
      if (result === 'ended') log.warn(`Ended a lost connection on the server (thread ${lost.threadId})`);
      return result !== 'elsewhere';
    },
    () => false,
  );
  let tries = triesByPool.get(db);
  if (!tries) triesByPool.set(db, (tries = new Set()));
  const running = tries;
  running.add(attempt);
  void attempt.finally(() => running.delete(attempt));
  return attempt;
}

/** Runs `next` after `delayMs` unless the pool's close came first (endWaitingLost runs it then). */
function wait(entry: Waiting, delayMs: number, next: () => void): void {
  entry.timer = setTimeout(() => {
    entry.timer = null;
    next();
  }, delayMs).unref();
}

/** Tries again with backoff until the server holds it no more or END_LOST_WITHIN_MS passed; the entry is waiting. */
function retry(db: Knex, entry: Waiting, started: number, delayMs: number): void {
  const { lost, log } = entry;
  wait(entry, delayMs, () => {
    void tryEnd(db, lost, log).then((done) => {
      if (waitingByPool.get(db)?.get(keyOf(lost)) !== entry) return; // the pool's close took it over
      if (done) waitingOf(db).delete(keyOf(lost));
      else if (Date.now() - started + delayMs > END_LOST_WITHIN_MS) {
        waitingOf(db).delete(keyOf(lost));
        log.error(`A lost connection (thread ${lost.threadId}) could not be ended on the server`);
      } else retry(db, entry, started, Math.min(delayMs * 2, 30_000));
    });
  });
}

/**
 * Ends a lost connection on the server (`endServerConnection`). Resolves true once the server holds it no more;
 * false when this try failed (unreachable, or the pool's connection was on another server), and then it is tried
 * again in the background for up to END_LOST_WITHIN_MS, after which the server's own timeouts are left to end it.
 */
export async function endLost(db: Knex, lost: LostConnection, log: Logger): Promise<boolean> {
  if (await tryEnd(db, lost, log)) return true;
  const waiting = waitingOf(db);
  if (!waiting.has(keyOf(lost))) {
    log.warn(
      `A lost connection (thread ${lost.threadId}) could not be ended on the server yet; trying again`,
    );
    const entry: Waiting = { lost, log, timer: null };
    waiting.set(keyOf(lost), entry);
    retry(db, entry, Date.now(), 1_000);
  }
  return false;
}

/** Ends a lost connection on the server `afterMs` from now (endLost), or at the pool's close if that comes first. */
export function endLostLater(db: Knex, lost: LostConnection, afterMs: number, log: Logger): void {
  const waiting = waitingOf(db);
  if (waiting.has(keyOf(lost))) return;
  const entry: Waiting = { lost, log, timer: null };
  waiting.set(keyOf(lost), entry);
  wait(entry, afterMs, () => {
    waiting.delete(keyOf(lost));
    void endLost(db, lost, log);
  });
}

/**
 * Before a pool closes (the service stops): every lost connection it has still to end is tried once now, without
 * waiting out its delay or backoff, and the tries under way are awaited. Safe by then: the requests are answered,
 * so no lost COMMIT's outcome is being checked (a COMMIT's delay only lets such a check see it land first). What
 * still cannot be ended is logged and left to the server's own timeouts. Each try is bounded by the pool's timeouts.
 */
export async function endWaitingLost(db: Knex): Promise<void> {
  const waiting = waitingByPool.get(db);
  waitingByPool.delete(db);
  const tries = [...(triesByPool.get(db) ?? [])];
  for (const { lost, log, timer } of waiting?.values() ?? []) {
    if (!timer) continue; // being tried: among `tries`
    clearTimeout(timer);
    tries.push(
      tryEnd(db, lost, log).then((done) => {
        if (!done) log.error(`A lost connection (thread ${lost.threadId}) could not be ended on the server`);
        return done;
      }),
    );
  }
  await Promise.all(tries);
}
