// Bounds on every wait for MySQL/MariaDB, so an unreachable, black-holed or locked database becomes a
// prompt 503 instead of a request that hangs: connect (mysql2 connectTimeout), pool acquire (knex
// acquireConnectionTimeout), per statement on the server (MariaDB max_statement_time, MySQL
// max_execution_time for SELECTs), lock waits (innodb_lock_wait_timeout), and a client-side limit on
// every query for the case the server never answers at all (a black-holed connection): mysql2 has a
// per-query `timeout` but knex never sets it, so each pooled connection gets it by default.
import type { DbTimeouts } from './config';

/** The client-side limit fires after the server-side one, so a live server reports its own timeout. */
export const CLIENT_QUERY_GRACE_MS = 1_000;

/**
 * knex gives up on a ROLLBACK after 5 s and releases the connection with the ROLLBACK still pending on it; the next
 * request given that connection would queue behind it, and mysql2 never answers what is queued on a connection
 * that is then closed: a hang. A ROLLBACK's own limit stays under knex's, so the connection is given up first.
 */
const ROLLBACK_TIMEOUT_MS = 4_000;
const ROLLBACK = /^\s*ROLLBACK\b/i;

type Callback = (err: (Error & { code?: string }) | null, ...rest: unknown[]) => void;

interface MysqlConnection {
  query(options: unknown, values?: unknown, callback?: unknown): unknown;
  destroy(): void;
  /** The server's id of this connection, from the handshake. */
  threadId?: number | null;
  /** Set by knex while the connection runs a transaction. */
  __knexTxId?: string;
}

/**
 * Told when a connection is given up inside a transaction (its statement got no answer, or its link failed), so
 * that it can be ended on the server after `afterMs` (lost-connections.ts).
 */
export type GivenUp = (lost: ConnectionPlace & { threadId: number }, afterMs: number) => void;

function sessionQuery<T = unknown>(conn: MysqlConnection, sql: string): Promise<T> {
  return new Promise((resolve, reject) =>
    conn.query(sql, (err: Error | null, rows: T) => (err ? reject(err) : resolve(rows))),
  );
}

/** Where a pooled connection is, as its server sees it. */
export interface ConnectionPlace {
  /** The server, as it names itself (`@@hostname:@@port`). */
  server: string;
  /** The client end, as the server shows it in its process list (`address:port` over TCP). */
  client: string;
}

const places = new WeakMap<object, ConnectionPlace>();

/**
 * Where a connection is, and only when the id the handshake gave is the server's own thread id: a lost connection
 * is ended on the server by that id (`KILL CONNECTION`), which must be sent to the same server (not through a
 * balancer to another one, nor through a proxy that hands out ids of its own), and only while that id is still
 * the same client's (a restarted server hands out its ids again). Undefined when not known.
 */
export function placeOf(conn: object): ConnectionPlace | undefined {
  return places.get(conn);
}

/** What a statement queued behind one that got no answer fails with (mysql2's error for a closed connection). */
function closedError(): Error {
  return Object.assign(
    new Error("Can't run the statement: its connection was closed after an earlier statement got no answer"),
    { fatal: true },
  );
}

/** Connections already reported given up (a timed-out statement, then knex's ROLLBACK on the closed connection). */
const reported = new WeakSet<object>();

/** Applies the session limits and the default client-side query timeout to a new pooled connection. */
export async function limitMysqlConnection(
  conn: MysqlConnection,
  timeouts: DbTimeouts,
  onGivenUp?: GivenUp,
): Promise<void> {
  const lockWaitSeconds = Math.max(1, Math.ceil(timeouts.statementMs / 1000));
  await sessionQuery(conn, `SET SESSION innodb_lock_wait_timeout = ${lockWaitSeconds}`);
  try {
    await sessionQuery(conn, `SET SESSION max_statement_time = ${timeouts.statementMs / 1000}`);
  } catch {
    // MySQL has no max_statement_time; max_execution_time bounds its SELECTs (milliseconds)
    await sessionQuery(conn, `SET SESSION max_execution_time = ${timeouts.statementMs}`);
  }

  const [self] = await sessionQuery<
    Array<{ id: number | string; host: string; port: number | string; client: string | null }>
  >(
    conn,
    'SELECT CONNECTION_ID() AS id, @@hostname AS host, @@port AS port, ' +
      '(SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()) AS client',
  );
  if (self && Number(self.id) === conn.threadId && self.client)
    places.set(conn, { server: `${self.host}:${self.port}`, client: self.client });

  const timeout = timeouts.statementMs + CLIENT_QUERY_GRACE_MS;
  const query = conn.query.bind(conn);
  /** The statements sent on this connection and not answered yet: each one's way to fail it. */
  const unanswered = new Set<() => void>();
  conn.query = (options: unknown, values?: unknown, callback?: unknown) => {
    if (typeof options !== 'object' || options === null || typeof callback !== 'function') {
      return query(options, values, callback);
    }
    let answered = false;
    const done: Callback = (err, ...rest) => {
      unanswered.delete(fail);
      if (answered) return;
      answered = true;
      (callback as Callback)(err, ...rest);
    };
    // mysql2 never answers the statements queued behind one it timed out once the connection is closed: they fail
    // here instead, as a query on a closed connection does (a database-unavailable error, db-errors.ts).
    const fail = () => done(closedError());
    unanswered.add(fail);
    // Read when the statement is sent: knex may end the transaction (a ROLLBACK it gave up on) before the answer.
    const inTransaction = conn.__knexTxId !== undefined;
    const sql = (options as { sql?: unknown }).sql;
    const limit =
      typeof sql === 'string' && ROLLBACK.test(sql) ? Math.min(timeout, ROLLBACK_TIMEOUT_MS) : timeout;
    return query(
      { timeout: limit, ...options },
      values,
      (err: (Error & { code?: string; fatal?: boolean }) | null, ...rest: unknown[]) => {
        // mysql2 leaves a timed-out query queued on the connection; a destroyed connection is evicted by
        // knex's pool validation, and the server rolls back whatever transaction it held once it learns of the
        // close, unless a COMMIT still on the wire reaches it first (commit-outcome.ts's check waits for that
        // transaction's end).
        const timedOut = err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT';
        if (timedOut) {
          conn.destroy();
          for (const queued of [...unanswered]) if (queued !== fail) queued();
        }
        // A server that never learns of it (a half-open connection) would keep the transaction and its row locks
        // for hours: it is ended there. Not when the server closed the connection itself (it knows); after an
        // unanswered COMMIT only a lock wait plus the grace later, so that the outcome check sees a COMMIT still on
        // its way land.
        const place = places.get(conn);
        const lostHere = timedOut || (err?.fatal === true && err.code !== 'PROTOCOL_CONNECTION_LOST');
        if (lostHere && inTransaction && place && typeof conn.threadId === 'number' && !reported.has(conn)) {
          reported.add(conn);
          const commit = typeof sql === 'string' && /^\s*COMMIT\b/i.test(sql);
          onGivenUp?.(
            { threadId: conn.threadId, ...place },
            commit ? lockWaitSeconds * 1000 + CLIENT_QUERY_GRACE_MS : 0,
          );
        }
        done(err, ...rest);
      },
    );
  };
}
