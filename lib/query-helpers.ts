// knex helpers shared by the repositories: one offset page of a query with its total, and a LIKE
// pattern that matches a keyword literally. The HTTP side of paging (the page/size query parameters and
// the page envelope) is lib/http/pagination.ts.
import type { Knex } from 'knex';
import { lowerForSearch, SQLITE_UNICODE_LOWER } from './sqlite-statements';
import { affectedRows } from './db';

export interface PageRequest {
  /** From 0. */
  page: number;
  size: number;
}

/** The rows of one page and how many rows match in all. */
export interface PageSlice<T> {
  items: T[];
  total: number;
}

/** Rows matching `query` (its select and order are ignored). */
export async function countRows(query: Knex.QueryBuilder): Promise<number> {
  const counted = (await query.clone().clearSelect().clearOrder().count({ total: '*' }).first()) as
    { total: number | string } | undefined;
  return Number(counted?.total ?? 0);
}

/**
 * One page of `query` and the total. `query` carries the filters and the ORDER BY (a total order, e.g. ending
 * in the id, so pages never overlap); `countTotal` lets a caller supply a cached count. Past the last row no
 * page query is made.
 */
export async function fetchPage<Row>(
  query: Knex.QueryBuilder,
  request: PageRequest,
  countTotal: () => Promise<number> = () => countRows(query),
): Promise<PageSlice<Row>> {
  const total = await countTotal();
  const items =
    total > request.page * request.size
      ? ((await query
          .clone()
          .offset(request.page * request.size)
          .limit(request.size)) as Row[])
      : [];
  return { items, total };
}

/** Maps a page's rows, keeping its total. */
export async function mapPage<Row, T>(
  slice: PageSlice<Row>,
  map: (rows: Row[]) => T[] | Promise<T[]>,
): Promise<PageSlice<T>> {
  return { items: await map(slice.items), total: slice.total };
}

/** Escapes `%`, `_` and the escape character itself for `LIKE ? ESCAPE '!'`, so a keyword matches literally. */
export function likeContains(keyword: string): string {
  return `%${keyword.replace(/[!%_]/g, (ch) => `!${ch}`)}%`;
}

/**
 * The one "contains, case ignored" rule of every search (product names, the admin's member list): `column`, lowered,
 * contains `keyword`, lowered; `%` and `_` match themselves. Both sides are lowered in full Unicode: on MySQL by the
 * database, with the comparison forced to utf8mb4_bin, else the column's collation would also fold accents ("cafe"
 * finding "café") and treat every emoji as equal; on SQLite, which compares bytes but whose LOWER() folds ASCII
 * only, by JavaScript's toLowerCase on both sides (SQLITE_UNICODE_LOWER), so "москва" finds "МОСКВА Mug".
 */
export function whereContainsIgnoringCase(
  q: Knex.QueryBuilder,
  column: string,
  keyword: string,
  mysql: boolean,
): Knex.QueryBuilder {
  if (mysql) {
    return q.whereRaw(`LOWER(??) LIKE LOWER(?) COLLATE utf8mb4_bin ESCAPE '!'`, [
      column,
      likeContains(keyword),
    ]);
  }
  return q.whereRaw(`${SQLITE_UNICODE_LOWER}(??) LIKE ? ESCAPE '!'`, [
    column,
    likeContains(lowerForSearch(keyword)),
  ]);
}

/**
 * Deletes the rows of `table` that `where` selects, `batch` ids at a time (no long lock on a big table);
 * returns how many were deleted. Used by the scheduled pruning. Once `signal` is aborted no further batch
 * starts (the rest is left for a later pass).
 */
export async function deleteInBatches(
  db: Knex,
  table: string,
  where: (q: Knex.QueryBuilder) => Knex.QueryBuilder,
  signal?: AbortSignal,
  batch = 1000,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    if (signal?.aborted) return deleted;
    const ids = ((await where(db(table)).select('id').limit(batch)) as Array<{ id: number }>).map(
      (r) => r.id,
    );
    if (ids.length === 0) return deleted;
    deleted += affectedRows(await db(table).whereIn('id', ids).delete());
    if (ids.length < batch) return deleted;
  }
}
