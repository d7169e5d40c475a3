// Driver errors, judged in one place: which of them mean "the database is unavailable right now" (the
// client gets 503 + Retry-After and may retry), and what of an error may be logged or stored. knex puts
// the SQL (and, unless compileSqlOnError is off, the bound values: a password or token hash) in front
// of the driver's message, and mysql2 quotes values in its own messages ("Duplicate entry 'x'"), so
// an error from the database keeps only its code and the driver's message with quoted values removed.
import { ServiceUnavailableError } from './errors';

/** Seconds a client is told to wait before retrying when the database is unavailable. */
export const DB_RETRY_AFTER_SECONDS = 5;

interface DriverErrorLike {
  name?: string;
  code?: unknown;
  errno?: unknown;
  fatal?: boolean;
  message?: string;
  sql?: string;
  sqlMessage?: string;
  sqlState?: string;
  nativeError?: DriverErrorLike;
  cause?: unknown;
}

// Network and protocol failures (node:net, mysql2), lock and statement timeouts and deadlocks (MariaDB, MySQL),
// refusals by an overloaded or stopping server, a server that cannot store (disk or table full, read-only after a
// failover), and SQLite's busy timeout running out. SQLite's full, I/O error and read-only families are matched by
// prefix below (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED, ...).
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'ER_LOCK_WAIT_TIMEOUT',
  // A deadlock victim was rolled back entirely: nothing was written, and a retry may pass.
  'ER_LOCK_DEADLOCK',
  'ER_STATEMENT_TIMEOUT',
  'ER_QUERY_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_NET_READ_INTERRUPTED',
  'ER_NET_WRITE_INTERRUPTED',
  'SQLITE_BUSY',
  'SQLITE_BUSY_SNAPSHOT',
  'SQLITE_BUSY_TIMEOUT',
  'SQLITE_FULL',
]);
const UNAVAILABLE_CODE_FAMILIES = /^SQLITE_(IOERR|READONLY)(_|$)/;

// MariaDB's max_statement_time (1969) has no name in every mysql2 version; CR_SERVER_GONE_ERROR and
// CR_SERVER_LOST (2006, 2013) come from other clients and proxies. A server that cannot store: ER_DISK_FULL (1021),
// ER_RECORD_FILE_FULL (1114: a table or its tablespace is full), ER_OPTION_PREVENTS_STATEMENT (1290: read_only, as a
// replica or a server being failed over is) and ER_READ_ONLY_MODE (1836).
const UNAVAILABLE_ERRNOS = new Set([1969, 2006, 2013, 1021, 1114, 1290, 1836]);

/** The driver's error and whatever wraps it (Objection's nativeError, an Error's cause), outermost first. */
function chain(err: unknown): DriverErrorLike[] {
  const out: DriverErrorLike[] = [];
  let current = err as DriverErrorLike | undefined;
  while (current && typeof current === 'object' && out.length < 5 && !out.includes(current)) {
    out.push(current);
    current = (current.nativeError ?? current.cause) as DriverErrorLike | undefined;
  }
  return out;
}

/** True when the error says the database cannot be reached or did not answer in time. */
export function isDatabaseUnavailable(err: unknown): boolean {
  return chain(err).some(
    (e) =>
      (typeof e.code === 'string' &&
        (UNAVAILABLE_CODES.has(e.code) || UNAVAILABLE_CODE_FAMILIES.test(e.code))) ||
      (typeof e.errno === 'number' && UNAVAILABLE_ERRNOS.has(e.errno)) ||
      // knex: the pool had no connection within acquireConnectionTimeout
      e.name === 'KnexTimeoutError' ||
      // mysql2: a query on a connection that already failed ("... in closed state")
      (e.fatal === true && e.code === undefined),
  );
}

/** The error to answer with: a 503 for an unavailable database, otherwise the error itself. */
export function toClientError(err: unknown): unknown {
  return isDatabaseUnavailable(err)
    ? new ServiceUnavailableError('The database is unavailable; please retry shortly', DB_RETRY_AFTER_SECONDS)
    : err;
}

function isFromDatabase(e: DriverErrorLike): boolean {
  return Boolean(
    e.nativeError ||
    e.sql !== undefined ||
    e.sqlMessage !== undefined ||
    e.sqlState !== undefined ||
    e.name === 'KnexTimeoutError' ||
    (typeof e.code === 'string' &&
      (/^(ER_|SQLITE_|PROTOCOL_)/.test(e.code) || UNAVAILABLE_CODES.has(e.code))),
  );
}

// Quoted text in a driver message is data (an entry, a value, the SQL "near" an error) unless it names
// a key, column, table or database.
const QUOTED = /(\b(?:key|column|table|database|index|constraint|variable)\s+)?'(?:[^'\\]|\\.|'')*'/gi;

function withoutValues(message: string): string {
  return message
    .replace(/near '.*' at line (\d+)/s, "near '…' at line $1") // the SQL itself, quotes and all
    .replace(QUOTED, (match, label: string | undefined) => (label ? match : "'…'"));
}

/** A name also for codes mysql2 does not know (MariaDB-only errors arrive with an errno only). */
function codeOf(errors: DriverErrorLike[]): string | undefined {
  const named = errors.map((e) => e.code).find((c) => typeof c === 'string') as string | undefined;
  if (named) return named;
  const errno = errors.map((e) => e.errno).find((n) => typeof n === 'number') as number | undefined;
  if (errno === 1969) return 'ER_STATEMENT_TIMEOUT';
  return errno === undefined ? undefined : `ER_${errno}`;
}

/**
 * A message that may be logged or stored: for database errors `CODE: driver message` without SQL text
 * or values; other errors keep their message.
 */
export function safeErrorMessage(err: unknown): string {
  if (!(err instanceof Error) && (typeof err !== 'object' || err === null)) return String(err);
  const outer = err as DriverErrorLike;
  const fromDb = chain(err).find(isFromDatabase);
  if (!fromDb) return outer.message ?? String(err);
  const native = outer.nativeError ?? outer;
  const code = codeOf([outer, native, fromDb]);
  let driverMessage = native.sqlMessage ?? fromDb.sqlMessage;
  if (driverMessage === undefined) {
    // knex: `<sql> - <driver message>`; the SQL may itself contain " - ", the driver message rarely does
    const message = native.message ?? '';
    const cut = message.lastIndexOf(' - ');
    driverMessage = cut >= 0 ? message.slice(cut + 3) : message;
  }
  return `${code ?? outer.name ?? 'DB_ERROR'}: ${withoutValues(driverMessage.trim())}`;
}

interface WarnLogger {
  warn(message: string): void;
  debug(message: string): void;
}

/**
 * knex's own messages, through our logger instead of the console. A failed acquire is also the error
 * of the request that waited for it (logged there), so it is debug here.
 */
export function knexLog(logger: WarnLogger) {
  // Pool retries, and knex's two lines about a migration lock another instance holds: the start waits for it
  // (lib/server.ts, prepareDatabase) and says so once, or fails naming the lock.
  const quiet =
    /^(Acquire connection error:|Connection Error:|Can't take lock to run migrations:|If you are sure migrations are not running)/;
  const line = (message: unknown) =>
    withoutValues(String(message instanceof Error ? safeErrorMessage(message) : message).split('\n')[0]);
  return {
    warn: (message: unknown) => {
      if (quiet.test(String(message))) logger.debug(line(message));
      else logger.warn(line(message));
    },
    error: (message: unknown) => logger.warn(line(message)),
    deprecate: (method: string, alternative: string) =>
      logger.warn(`knex: ${method} is deprecated, use ${alternative}`),
    debug: (message: unknown) => logger.debug(line(message)),
  };
}
