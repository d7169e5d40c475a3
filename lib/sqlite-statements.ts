// Prepared statements kept per SQLite connection. knex's better-sqlite3 client prepares (parses and compiles)
// every query it runs, and the group commit's statements are long (a 3-item cart batch's guarded UPDATE
// names ~170 products): compiling them was a fifth of the server's CPU per order on SQLite (bench/README.md,
// orders, issue 13, perf/cart2). A statement is reusable once it has run (better-sqlite3 resets it after
// `run`/`all`/`get`), and SQLite re-compiles a kept statement itself when the schema changed since. Bounded
// by entries and by the length of the SQL kept, least recently used dropped first.
// knex sets `safeIntegers` on a statement only for a query that asks for it; none of this service's does (a
// kept statement would carry that setting to the next query of the same text).

export interface StatementCacheLimits {
  maxEntries: number;
  /** Total length of the SQL texts kept; a longer text than this is prepared each time, never kept. */
  maxChars: number;
}

export const DEFAULT_STATEMENT_CACHE: StatementCacheLimits = { maxEntries: 256, maxChars: 1_000_000 };

interface Preparing {
  prepare(sql: string): unknown;
}

const caches = new WeakMap<object, () => { entries: number; chars: number }>();

/** Makes `connection.prepare` return the statement it prepared before for the same text, while kept. */
export function cachePreparedStatements(
  connection: Preparing,
  limits: StatementCacheLimits = DEFAULT_STATEMENT_CACHE,
): void {
  const prepare = connection.prepare.bind(connection);
  const kept = new Map<string, unknown>();
  let chars = 0;
  connection.prepare = (sql: string) => {
    const known = kept.get(sql);
    if (known !== undefined) {
      // Most recently used last: Map keeps insertion order, so the first key is the one to drop.
      kept.delete(sql);
      kept.set(sql, known);
      return known;
    }
    const statement = prepare(sql);
    if (sql.length <= limits.maxChars) {
      kept.set(sql, statement);
      chars += sql.length;
      for (const oldest of kept.keys()) {
        if (kept.size <= limits.maxEntries && chars <= limits.maxChars) break;
        kept.delete(oldest);
        chars -= oldest.length;
      }
    }
    return statement;
  };
  caches.set(connection, () => ({ entries: kept.size, chars }));
}

/** What a connection's cache holds (tests and diagnostics); null when it has none. */
export function statementCacheSize(connection: object): { entries: number; chars: number } | null {
  return caches.get(connection)?.() ?? null;
}

interface Transactional extends Preparing {
  readonly inTransaction: boolean;
}

/**
 * SQLite ends a transaction by itself on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, SQLITE_INTERRUPT):
 * knex's ROLLBACK then fails with "no transaction is active", and that error replaces the one that ended the
 * transaction (a full disk answered 500 instead of 503). Here a ROLLBACK with no transaction open does nothing, so
 * the transaction fails with its own error.
 */
export function rollbackOnlyWhenOpen(connection: Transactional): void {
  const prepare = connection.prepare.bind(connection);
  connection.prepare = (sql: string) => {
    const statement = prepare(sql) as { reader: boolean; run(...args: unknown[]): unknown };
    if (sql !== 'ROLLBACK') return statement;
    return {
      reader: false,
      run: (...args: unknown[]) =>
        connection.inTransaction ? statement.run(...args) : { changes: 0, lastInsertRowid: 0 },
    };
  };
}

/** SQLite's LOWER folds ASCII only: this function, made on every connection, lowers in full Unicode. */
export const SQLITE_UNICODE_LOWER = 'unicode_lower';

/**
 * The searches' lowering (both sides, on SQLite): JavaScript's toLowerCase without its one rule that depends on
 * the context, Greek's final sigma ('ΣΟΦΟΣ' lowers to 'σοφος' alone but 'σοφοσα' within 'ΣΟΦΟΣΑ'), so a keyword and
 * a name that holds it lower alike, as MariaDB's LOWER does them (always σ).
 */
export const lowerForSearch = (value: string): string => {
  const lowered = value.toLowerCase();
  return lowered.includes('ς') ? lowered.replaceAll('ς', 'σ') : lowered;
};

interface Functions {
  function(name: string, options: { deterministic: boolean }, fn: (value: unknown) => unknown): unknown;
}

/** Makes SQLITE_UNICODE_LOWER on `connection`: JavaScript's toLowerCase, the searches' case rule (query-helpers.ts). */
export function defineUnicodeLower(connection: Functions): void {
  connection.function(SQLITE_UNICODE_LOWER, { deterministic: true }, (value) =>
    typeof value === 'string' ? lowerForSearch(value) : value,
  );
}
