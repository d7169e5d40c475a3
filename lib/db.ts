// Knex for both databases (embedded SQLite by default, MySQL/MariaDB with DATABASE_URL), the Objection
// base model, and the one place where database errors are recognised.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory, { type Knex } from 'knex';
import { format as mysqlFormat } from 'mysql2';
import { Model, snakeCaseMappers, type Pojo } from 'objection';
import type { Config, DbTimeouts } from './config';
import { knexLog } from './db-errors';
import { limitMysqlConnection, type GivenUp } from './db-timeouts';
import { endLostLater } from './lost-connections';
import { cachePreparedStatements, defineUnicodeLower, rollbackOnlyWhenOpen } from './sqlite-statements';
import type { Logger } from './logger';

export type Db = Knex;
export type Trx = Knex.Transaction;

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const MIGRATIONS_DIR = path.join(root, 'migrations');
export const SEEDS_DIR = path.join(root, 'seeds');

/** mysql2's time zone for Date values, both ways (UTC). */
const MYSQL_TIMEZONE = 'Z';

/** `timeouts` bound every wait for the database (the service passes them; scripts and migrations do not). */
export function knexConfig(
  database: Config['database'],
  timeouts?: DbTimeouts,
  logger?: Logger,
  onGivenUp?: GivenUp,
): Knex.Config {
  const log = logger && { log: knexLog(logger.child({ component: 'Database' })) };
  const migrations: Knex.MigratorConfig = {
    directory: MIGRATIONS_DIR,
    loadExtensions: ['.ts'],
    tableName: 'knex_migrations',
  };
  const seeds: Knex.SeederConfig = { directory: SEEDS_DIR, loadExtensions: ['.ts'] };
  if (database.client === 'sqlite') {
    return {
      client: 'better-sqlite3',
      connection: { filename: database.filename },
      useNullAsDefault: true,
      // The one connection is shared by every request: one waits for it no longer than on MySQL/MariaDB.
      ...(timeouts && { acquireConnectionTimeout: timeouts.acquireMs }),
      compileSqlOnError: false,
      ...log,
      migrations,
      seeds,
      pool: {
        afterCreate(
          conn: {
            pragma(sql: string): unknown;
            prepare(sql: string): unknown;
            function(
              name: string,
              options: { deterministic: boolean },
              fn: (value: unknown) => unknown,
            ): unknown;
            readonly inTransaction: boolean;
          },
          done: (err: Error | null, conn: unknown) => void,
        ) {
          cachePreparedStatements(conn);
          rollbackOnlyWhenOpen(conn);
          defineUnicodeLower(conn);
          conn.pragma('journal_mode = WAL');
          conn.pragma('foreign_keys = ON');
          conn.pragma(`busy_timeout = ${timeouts?.statementMs ?? 5000}`);
          conn.pragma('synchronous = NORMAL');
          // Raised while a worker thread checkpoints (lib/wal-checkpoints.ts): the commits here then only append.
          if (database.walAutocheckpointPages) {
            conn.pragma(`wal_autocheckpoint = ${database.walAutocheckpointPages}`);
          }
          // Planner statistics: without them SQLite serves the plain product lists through the status index
          // and sorts every visible row (~90 ms at 100k products) instead of walking products_created_index
          // (0.3 ms). 0x10002 is what SQLite recommends when a long-lived connection opens: ANALYZE (bounded)
          // of the tables that need it; ~130 ms once at 100k products (bench/README.md, catalog on SQLite).
          conn.pragma('optimize = 0x10002');
          done(null, conn);
        },
      },
    };
  }
  const url = new URL(database.url);
  return {
    client: 'mysql2',
    connection: {
      host: url.hostname,
      port: url.port ? Number(url.port) : 3306,
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      database: decodeURIComponent(url.pathname.slice(1)),
      timezone: MYSQL_TIMEZONE,
      charset: 'utf8mb4',
      supportBigNumbers: true,
      dateStrings: false,
      ...(timeouts && { connectTimeout: timeouts.connectMs }),
    },
    pool: {
      min: 0,
      max: database.poolMax,
      ...(timeouts && {
        afterCreate(
          conn: Parameters<typeof limitMysqlConnection>[0],
          done: (err: unknown, conn: unknown) => void,
        ) {
          limitMysqlConnection(conn, timeouts, onGivenUp).then(
            () => done(null, conn),
            (err: unknown) => done(err, conn),
          );
        },
      }),
    },
    ...(timeouts && { acquireConnectionTimeout: timeouts.acquireMs }),
    // Error messages carry the SQL with placeholders, never the bound values (hashes, tokens).
    compileSqlOnError: false,
    ...log,
    migrations,
    seeds,
  };
}

export function createDb(database: Config['database'], timeouts?: DbTimeouts, logger?: Logger): Db {
  if (database.client === 'sqlite') fs.mkdirSync(path.dirname(database.filename), { recursive: true });
  const log = logger?.child({ component: 'Database' });
  // A connection given up inside a transaction is ended on the server (lost-connections.ts), after `afterMs`.
  const onGivenUp: GivenUp | undefined = log && ((lost, afterMs) => endLostLater(db, lost, afterMs, log));
  const db = knexFactory(knexConfig(database, timeouts, logger, onGivenUp));
  return db;
}

/** Rows per multi-row statement on SQLite at most (its bound values stay far under SQLite's 32,766). */
const SQLITE_LARGEST_STATEMENT = 256;

/** Anything knex-made that knows its client: the knex instance, a transaction, a query builder. */
type KnexSource = Knex | Knex.QueryBuilder | { client: unknown };

/**
 * The one place that tells the two databases apart. Code that must differ asks `dialect.of(x)` (or the
 * shorthand `dialect.isMysql(x)`) instead of reading knex's client name itself.
 */
export const dialect = {
  of(source: KnexSource): 'mysql' | 'sqlite' {
    const client = (source as { client: { config: { client: string } } }).client.config.client;
    return client === 'mysql2' ? 'mysql' : 'sqlite';
  },
  isMysql(source: KnexSource): boolean {
    return dialect.of(source) === 'mysql';
  },
  /**
   * The id a multi-row INSERT reports is the FIRST row's on MySQL/MariaDB (mysql2) and the LAST row's on
   * SQLite (knex reports the last rowid); the first id of `count` rows either way.
   */
  firstInsertedId(source: KnexSource, reported: number, count: number): number {
    return dialect.isMysql(source) ? reported : reported - count + 1;
  },
  /**
   * The sizes a statement over `count` rows is split into, in order. MySQL/MariaDB: at most `max` rows each
   * (every statement is a round trip). SQLite: power-of-two sizes up to `max` (170 rows: 128 + 32 + 8 + 2),
   * so the texts repeat from batch to batch and the connection's prepared statements are reused
   * (lib/sqlite-statements.ts) instead of each batch's text being compiled anew; there is no round trip.
   */
  statementSizes(source: KnexSource, count: number, max = Number.MAX_SAFE_INTEGER): number[] {
    const sizes: number[] = [];
    if (dialect.isMysql(source)) {
      for (let left = count; left > 0; left -= max) sizes.push(Math.min(left, max));
      return sizes;
    }
    let size = 1;
    while (size * 2 <= Math.min(max, SQLITE_LARGEST_STATEMENT)) size *= 2;
    for (let left = count; left > 0;) {
      while (size > left) size /= 2;
      sizes.push(size);
      left -= size;
    }
    return sizes;
  },
  /** The result of a raw write (`db.raw`): mysql2's `[ResultSetHeader]`, better-sqlite3's `{ changes, lastInsertRowid }`. */
  rawWriteResult(source: KnexSource, result: unknown): { affectedRows: number; insertId: number } {
    if (dialect.isMysql(source)) {
      const header = (result as [{ affectedRows: number; insertId: number | string }])[0];
      return { affectedRows: Number(header.affectedRows), insertId: Number(header.insertId) };
    }
    const info = result as { changes: number; lastInsertRowid: number | bigint };
    return { affectedRows: Number(info.changes), insertId: Number(info.lastInsertRowid) };
  },
};

/**
 * Runs a prebuilt statement (`?` placeholders) with its bindings: the group commit's multi-row INSERTs and
 * guarded UPDATE, hundreds of values each. On MySQL/MariaDB the values are escaped here by mysql2's own
 * `format`, with the connection's settings (what mysql2 does for a query with values), and knex gets the
 * finished text without bindings: its raw query would otherwise scan the text and copy the values once more
 * before mysql2 escapes them (~2.5-5 us of CPU per order, bench/README.md, orders, 2026-11-25 11:00). An error
 * names the statement with its placeholders, never the values (as `compileSqlOnError: false` does for every
 * other query). SQLite binds the values to its reused prepared statement.
 */
export async function runPrebuilt(
  db: Knex | Knex.Transaction,
  sql: string,
  bindings: Knex.Value[],
): Promise<unknown> {
  if (!dialect.isMysql(db)) return db.raw(sql, bindings);
  const text = mysqlFormat(sql, bindings as Parameters<typeof mysqlFormat>[1], false, MYSQL_TIMEZONE);
  try {
    return await db.raw(text);
  } catch (err) {
    const error = err as Error & { sql?: string };
    if (typeof error.message === 'string' && error.message.startsWith(text))
      error.message = sql + error.message.slice(text.length);
    if (error.sql !== undefined) error.sql = sql;
    throw err;
  }
}

/** Rows changed by an UPDATE/DELETE through the query builder, on either database. */
export function affectedRows(result: unknown): number {
  return typeof result === 'number'
    ? result
    : Number((result as { affectedRows?: number })?.affectedRows ?? 0);
}

interface DbError {
  code?: string;
  errno?: number;
  nativeError?: DbError;
}

/** The driver's error, also when Objection wrapped it (UniqueViolationError etc. keep it as nativeError). */
function driverError(err: unknown): DbError {
  const e = err as DbError;
  return e?.nativeError ?? e;
}

export function isUniqueViolation(err: unknown): boolean {
  const e = driverError(err);
  return (
    e?.code === 'ER_DUP_ENTRY' ||
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

export function isForeignKeyViolation(err: unknown): boolean {
  const e = driverError(err);
  return e?.code === 'ER_NO_REFERENCED_ROW_2' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/**
 * The server answered that a statement waited too long (a lock wait, or the statement's time limit: MariaDB's
 * max_statement_time is errno 1969, unnamed in some mysql2 versions; MySQL's ER_QUERY_TIMEOUT): it is reachable.
 */
export function isServerWaitTimeout(err: unknown): boolean {
  const e = driverError(err);
  return (
    e?.code === 'ER_LOCK_WAIT_TIMEOUT' ||
    e?.code === 'ER_STATEMENT_TIMEOUT' ||
    e?.code === 'ER_QUERY_TIMEOUT' ||
    e?.errno === 1969
  );
}

/**
 * InnoDB chose this transaction as a deadlock victim and rolled it back at once: nothing of it was written, and
 * running it again may pass. Unlike a lock wait that timed out, which already waited the whole limit.
 */
export const isDeadlockVictim = (err: unknown) => driverError(err)?.code === 'ER_LOCK_DEADLOCK';

/**
 * MariaDB/MySQL answered that this statement's rows were held by another transaction: a lock wait, or the
 * statement's own time limit (which a lock wait usually meets first), that timed out, or a deadlock. The server
 * is reachable: the trouble is these rows, not the database.
 */
export function isRowContention(err: unknown): boolean {
  return isServerWaitTimeout(err) || isDeadlockVictim(err);
}

/**
 * Runs `work` (a whole transaction, or one statement) again when InnoDB picked it as a deadlock victim: the
 * server rolled it back entirely, so nothing of it was written. After `attempts` the error goes on (answered
 * 503 with Retry-After, lib/db-errors.ts). A lock wait that timed out (or SQLITE_BUSY) is never retried: it already
 * waited the whole limit, and a retry would wait behind the same row again.
 */
export async function retryDeadlocks<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isDeadlockVictim(err) || attempt >= attempts) throw err;
    }
  }
}

/** Money is integer cents in code; DECIMAL(12,2) in the database (mysql2 returns strings, SQLite numbers). */
export function toCents(value: string | number): number {
  if (typeof value === 'number') return Math.round(value * 100);
  const [whole, frac = ''] = value.trim().split('.');
  const sign = whole.startsWith('-') ? -1 : 1;
  return sign * (Math.abs(Number(whole)) * 100 + Number((frac + '00').slice(0, 2)));
}

export function fromCents(cents: number): number {
  return cents / 100;
}

export function centsToDecimal(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** Base for every model: snake_case columns, and times read back as Date on both databases. */
export class BaseModel extends Model {
  static get columnNameMappers() {
    return snakeCaseMappers();
  }

  $parseDatabaseJson(json: Pojo): Pojo {
    const parsed = super.$parseDatabaseJson(json);
    for (const key of Object.keys(parsed)) {
      if (key.endsWith('At') && parsed[key] !== null && !(parsed[key] instanceof Date)) {
        parsed[key] = new Date(parsed[key]);
      }
    }
    return parsed;
  }
}
