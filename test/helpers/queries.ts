// Counting the SQL statements an app runs (knex's 'query' event on its pool): how the tests see that a cache
// answered, or how many statements a write took.
import type { Knex } from 'knex';

export interface QueryEvent {
  sql: string;
  bindings?: readonly unknown[];
}

/** A statement that reads the products table. */
export const readsProducts = (query: QueryEvent) => /from [`"]products[`"]/i.test(query.sql);

/** A statement that updates the products table. */
export const updatesProducts = (query: QueryEvent) => /^update [`"]products[`"]/i.test(query.sql);

/**
 * Whether a statement carries `value`: among its bindings, or written into its text where the statement's values
 * were escaped before knex saw it (the group commit's prebuilt statements on MySQL/MariaDB, `runPrebuilt`). In the
 * text only a bare number counts: quoted strings (a date's `'2026-11-25 12:00:00'`, a name) are left out first.
 */
export const carries = (query: QueryEvent, value: number) =>
  (query.bindings ?? []).includes(value) ||
  new RegExp(`(?<![\\w.])${value}(?![\\w.])`).test(query.sql.replace(/'(?:[^'\\]|\\.|'')*'/g, "''"));

/** Counts the statements matching `matches` from now until `stop()`. */
export function watchQueries(db: Knex, matches: (query: QueryEvent) => boolean) {
  let count = 0;
  const listener = (query: QueryEvent) => {
    if (matches(query)) count++;
  };
  db.on('query', listener);
  return { count: () => count, stop: () => void db.removeListener('query', listener) };
}

/** `run()`'s result and how many statements matching `matches` ran meanwhile. */
export async function countQueries<T>(
  db: Knex,
  matches: (query: QueryEvent) => boolean,
  run: () => Promise<T>,
): Promise<{ result: T; count: number }> {
  const watch = watchQueries(db, matches);
  try {
    const result = await run();
    return { result, count: watch.count() };
  } finally {
    watch.stop();
  }
}
