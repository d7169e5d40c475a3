// The WHERE and ORDER BY of the product lists: visibility per caller, the filters of the spec, and the
// sort orders. Kept apart from the service so the offset list, the cursor list and the benchmark's
// EXPLAIN all build the very same SQL.
import type { Knex } from 'knex';
import type { AuthMember } from '../auth/tokens';
import { centsToDecimal } from '../db';
import { applyKeyword } from './keyword-index';
import type { ProductStatus } from './product-model';
import type { SortField } from './product-schemas';

export interface ProductFilters {
  keyword?: string;
  categoryId?: number;
  status?: ProductStatus;
  sellerId?: number;
  /** Inclusive bounds, in cents. */
  minPrice?: number;
  maxPrice?: number;
}

const PUBLIC_STATUSES: ProductStatus[] = ['ON_SALE', 'SOLD_OUT'];

/**
 * Visibility (API.md): ON_SALE and SOLD_OUT for everyone, plus the caller's own DRAFTs for a seller,
 * everything but DELETED for an admin. A status filter narrows within what the caller may see.
 */
function applyVisibility(
  q: Knex.QueryBuilder,
  viewer: AuthMember | null,
  status: ProductStatus | undefined,
): void {
  const isAdmin = viewer?.role === 'ADMIN';
  const sellerId = viewer?.role === 'SELLER' ? viewer.id : null;
  if (status === 'DELETED') {
    q.whereRaw('1 = 0');
  } else if (status === 'DRAFT') {
    if (isAdmin) q.where('status', 'DRAFT');
    else if (sellerId !== null) q.where({ status: 'DRAFT', seller_id: sellerId });
    else q.whereRaw('1 = 0');
  } else if (status) {
    q.where('status', status);
  } else if (isAdmin) {
    q.whereNot('status', 'DELETED');
  } else if (sellerId !== null) {
    q.where((w) =>
      w
        .whereIn('status', PUBLIC_STATUSES)
        .orWhere((own) => own.where({ status: 'DRAFT', seller_id: sellerId })),
    );
  } else {
    q.whereIn('status', PUBLIC_STATUSES);
  }
}

function isMysqlQuery(q: Knex.QueryBuilder): boolean {
  return (q as unknown as { client: { config: { client: string } } }).client.config.client === 'mysql2';
}

export function applyFilters(
  q: Knex.QueryBuilder,
  viewer: AuthMember | null,
  filters: ProductFilters,
): Knex.QueryBuilder {
  applyVisibility(q, viewer, filters.status);
  // Index-served, exact LIKE as the final check (keyword-index.ts).
  if (filters.keyword) applyKeyword(q, filters.keyword, isMysqlQuery(q));
  if (filters.categoryId !== undefined) q.where('category_id', filters.categoryId);
  if (filters.sellerId !== undefined) q.where('seller_id', filters.sellerId);
  if (filters.minPrice !== undefined) q.where('price', '>=', centsToDecimal(filters.minPrice));
  if (filters.maxPrice !== undefined) q.where('price', '<=', centsToDecimal(filters.maxPrice));
  return q;
}

const SORT_COLUMNS: Record<SortField, string> = {
  createdAt: 'created_at',
  price: 'price',
  salesCount: 'sales_count',
};

/** `createdAt,desc` etc.; a bare field sorts ascending (as Spring does); id desc always breaks ties. */
export function parseSort(sort: string): { field: SortField; direction: 'asc' | 'desc' } {
  const [field, direction = 'asc'] = sort.split(',');
  const known =
    (Object.keys(SORT_COLUMNS) as SortField[]).find((f) => f.toLowerCase() === field.toLowerCase()) ??
    'createdAt';
  return { field: known, direction: direction.toLowerCase() === 'desc' ? 'desc' : 'asc' };
}

export function applySort(
  q: Knex.QueryBuilder,
  sort: { field: SortField; direction: 'asc' | 'desc' },
): Knex.QueryBuilder {
  return q.orderBy([
    { column: SORT_COLUMNS[sort.field], order: sort.direction },
    { column: 'id', order: 'desc' },
  ]);
}

/** Keyset predicate in the expanded form (the row-constructor form can skip the index on MySQL). */
export function applyCursor(
  q: Knex.QueryBuilder,
  position: { createdAt: Date; id: number },
): Knex.QueryBuilder {
  return q.where((w) =>
    w
      .where('created_at', '<', position.createdAt)
      .orWhere((same) => same.where('created_at', '=', position.createdAt).andWhere('id', '<', position.id)),
  );
}
