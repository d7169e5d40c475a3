// Offset pagination shared by every list endpoint (API.md "Lists"), the HTTP side: the `page`/`size` query
// schema and the page envelope `{ content, page, size, totalElements, totalPages, hasNext }` a route builds from
// a service's PageSlice (its shape is the yup schema in lib/http/response-fields.ts). The SQL side is
// lib/query-helpers.ts.
import type { PageRequest, PageSlice } from '../query-helpers';
import { integer } from './validate';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

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

export function pageEnvelope<T>(slice: PageSlice<T>, request: PageRequest): Page<T> {
  const { items: content, total: totalElements } = slice;
  return {
    content,
    page: request.page,
    size: request.size,
    totalElements,
    totalPages: Math.ceil(totalElements / request.size),
    hasNext: (request.page + 1) * request.size < totalElements,
  };
}
