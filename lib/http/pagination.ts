// Offset pagination shared by every list endpoint (API.md "Lists"): the `page`/`size` query schema,
// the page envelope `{ content, page, size, totalElements, totalPages, hasNext }`, its JSON Schema for
// the OpenAPI document, and a knex helper that counts and fetches one page.
import type { Knex } from 'knex';
import { integer } from './validate';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export interface PageRequest {
  page: number;
  size: number;
}

export interface Page<T> {
  content: T[];
  page: number;
  size: number;
  totalElements: number;
  totalPages: number;
  hasNext: boolean;
}

/** A whole number from a query string; anything but plain digits (`-1`, `1.5`, `abc`, `?page=1&page=2`) fails. */
const queryInteger = () => integer().integer().max(1_000_000_000, '${path} is too large');

/** `page` (from 0) and `size` (1..100, default 20); spread into an area's query schema. */
export function pageQueryFields() {
  return {
    page: queryInteger()
      .typeError('page must be an integer >= 0')
      .min(0, 'page must be an integer >= 0')
      .default(0)
      .meta({ description: 'The page to return, from 0' }),
    size: queryInteger()
      .typeError(`size must be an integer between 1 and ${MAX_PAGE_SIZE}`)
      .min(1, `size must be an integer between 1 and ${MAX_PAGE_SIZE}`)
      .max(MAX_PAGE_SIZE, `size must be an integer between 1 and ${MAX_PAGE_SIZE}`)
      .default(DEFAULT_PAGE_SIZE)
      .meta({ description: `Items per page, 1-${MAX_PAGE_SIZE}` }),
  };
}

export function pageEnvelope<T>(content: T[], request: PageRequest, totalElements: number): Page<T> {
  return {
    content,
    page: request.page,
    size: request.size,
    totalElements,
    totalPages: Math.ceil(totalElements / request.size),
    hasNext: (request.page + 1) * request.size < totalElements,
  };
}

/**
 * Counts the rows of `query` and fetches one page of them. `query` carries the filters and the ORDER BY
 * (a total order, e.g. ending in the id, so pages never overlap); the count ignores the order and selection.
 */
/** Rows matching `query` (its select and order are ignored). */
export async function countRows(query: Knex.QueryBuilder): Promise<number> {
  const counted = (await query.clone().clearSelect().clearOrder().count({ total: '*' }).first()) as
    { total: number | string } | undefined;
  return Number(counted?.total ?? 0);
}

/** One page of `query` and the total; `countTotal` lets a caller supply a cached count. */
export async function fetchPage<Row>(
  query: Knex.QueryBuilder,
  request: PageRequest,
  countTotal: () => Promise<number> = () => countRows(query),
): Promise<{ rows: Row[]; total: number }> {
  const total = await countTotal();
  const rows =
    total > request.page * request.size
      ? ((await query
          .clone()
          .offset(request.page * request.size)
          .limit(request.size)) as Row[])
      : [];
  return { rows, total };
}

/** Escapes `%`, `_` and the escape character itself for `LIKE ? ESCAPE '!'`, so a keyword matches literally. */
export function likeContains(keyword: string): string {
  return `%${keyword.replace(/[!%_]/g, (ch) => `!${ch}`)}%`;
}
