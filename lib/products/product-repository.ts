// The SQL of the products area (knex): the reads and writes of the product service, and the WHERE and
// ORDER BY of the product lists (visibility per caller, the filters of the spec, the sort orders), exported
// so the benchmark's EXPLAIN builds the very same SQL as the endpoints. Stock and deletion writes are
// stock-writes.ts (they run inside the inventory actors).
import type { Knex } from 'knex';
import type { AuthMember } from '../auth/tokens';
import { affectedRows, centsToDecimal, dialect, toCents, type Db, type Trx } from '../db';
import { sql, statusFollowingStockRaw } from './product-status-sql';
import { countRows, fetchPage, type PageRequest, type PageSlice } from '../query-helpers';
import { applyKeyword, applyKeywordCheck } from './keyword-index';
import { PUBLIC_STATUSES } from '../../actors/product-status';
import { Product, type ProductStatus } from './product-model';
import type { SortField } from './product-schemas';

/** A `products` row as the database returns it (snake_case columns). */
export type ProductRow = Record<string, unknown>;

export interface ProductFilters {
  keyword?: string;
  categoryId?: number;
  status?: ProductStatus;
  sellerId?: number;
  /** Inclusive bounds, in cents. */
  minPrice?: number;
  maxPrice?: number;
}

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

export function applyFilters(
  db: Db,
  q: Knex.QueryBuilder,
  viewer: AuthMember | null,
  filters: ProductFilters,
): Knex.QueryBuilder {
  applyVisibility(q, viewer, filters.status);
  // Index-served, exact LIKE as the final check (keyword-index.ts).
  if (filters.keyword) applyKeyword(q, filters.keyword, dialect.isMysql(db));
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

/**
 * Keyset predicate in the expanded form (the row-constructor form can skip the index on MySQL), led by a plain
 * `created_at <= ?` bound: the OR alone is not a range SQLite builds an index range from, so it answered a deep
 * cursor page by a MULTI-INDEX OR over the status index and a temp B-tree sort of every row after the cursor
 * (5.9x the first page's time at depth 90k of 100k); with the bound it walks products_created_index from the
 * cursor and stops after the page.
 */
export function applyCursor(
  q: Knex.QueryBuilder,
  position: { createdAt: Date; id: number },
): Knex.QueryBuilder {
  return q
    .where('created_at', '<=', position.createdAt)
    .where((w) =>
      w
        .where('created_at', '<', position.createdAt)
        .orWhere((same) =>
          same.where('created_at', '=', position.createdAt).andWhere('id', '<', position.id),
        ),
    );
}

export type SortOrder = ReturnType<typeof parseSort>;

/** What a seller's PATCH may change besides the stock. */
export interface CatalogEdit {
  categoryId?: number;
  name?: string;
  description?: string | null;
  /** In currency units (API.md's number), stored as DECIMAL(12,2). */
  price?: number;
  status?: 'DRAFT' | 'ON_SALE';
}

/** Columns an order snapshots (name, price) or that decide whether the product may be ordered (status). */
const CATALOG_COLUMNS = ['category_id', 'name', 'description', 'price', 'status'];

/**
 * THE rule of products.catalog_version: an UPDATE of a seller's edit that sets any catalog column also
 * bumps the version, in the same statement, so the guarded stock UPDATE of an order judged on the old
 * name or price is refused (lib/inventory/stock-repository.ts). Stock writes (orders, cancellations, a
 * stockQuantity PATCH, whose status only follows the stock) never come through here and never bump it.
 */
export function withCatalogVersion(db: Db, fields: Record<string, unknown>): Record<string, unknown> {
  if (!CATALOG_COLUMNS.some((column) => column in fields)) return fields;
  return { ...fields, catalog_version: db.raw('catalog_version + 1') };
}

/**
 * How many of the newest products a keyword page is first looked for in. The name index answers a keyword by
 * reading every match (then sorted by createdAt): cheap for a rare keyword, ~3,000 rows for a 3% keyword at
 * 100k products. The newest rows, walked along products_created_index, hold a common keyword's first page
 * after a few hundred rows, and the walk stops there. So a page of a keyword with more than
 * KEYWORD_WINDOW_ROWS matches (its count, which the page needs anyway, says so) walks the newest
 * KEYWORD_WINDOW_ROWS rows first; when they hold the whole page, that page is the answer (the window is a
 * prefix of the same total order, so its first N matches are the catalogue's first N); otherwise the index
 * answers. A keyword with fewer matches goes to the index at once: it reads no more rows than the window
 * would. Bounded either way but for a common keyword whose matches are all old.
 */
export const KEYWORD_WINDOW_ROWS = 1000;

/**
 * The window's order: newest first (in ascending order, ties by id desc, the window's end is not index-ordered
 * on MariaDB).
 */
const NEWEST_FIRST: SortOrder = { field: 'createdAt', direction: 'desc' };

/** A keyword page the window can answer: newest first, no filter but the keyword and status (README). */
function windowFits(filters: ProductFilters, sort: SortOrder, rowsNeeded: number): boolean {
  return (
    Boolean(filters.keyword) &&
    sort.field === NEWEST_FIRST.field &&
    sort.direction === NEWEST_FIRST.direction &&
    filters.categoryId === undefined &&
    filters.sellerId === undefined &&
    filters.minPrice === undefined &&
    filters.maxPrice === undefined &&
    rowsNeeded <= KEYWORD_WINDOW_ROWS / 4
  );
}

/** A row's place in the createdAt order (created_at as the driver returns it, so it binds back unchanged). */
export interface WindowEnd {
  createdAt: Knex.Value;
  id: number;
}

/** `products`, on SQLite walked along `index` (told, so no statistics can turn it elsewhere). */
function walkedAlong(db: Db, index: string): Knex.QueryBuilder {
  return dialect.isMysql(db) ? db('products') : db.from(db.raw('?? INDEXED BY ??', ['products', index]));
}

/**
 * The last of the newest KEYWORD_WINDOW_ROWS rows (after `position`), any status: an index-only read of
 * products_created_index (created_at, id). None when fewer rows follow.
 */
export function keywordWindowEndQuery(db: Db, position?: { createdAt: Date; id: number }): Knex.QueryBuilder {
  const q = walkedAlong(db, 'products_created_index').select('created_at', 'id');
  if (position) applyCursor(q, position);
  return applySort(q, NEWEST_FIRST)
    .offset(KEYWORD_WINDOW_ROWS - 1)
    .limit(1);
}

/**
 * The keyword's matches among the rows up to `end` (the window; all rows when `end` is null), after
 * `position`, newest first, `offset`/`limit` applied: the exact check alone, walked in order along
 * products_created_status_name_index (created_at, id, status, name: each row is checked from the index,
 * migration 20261124000001), which stops after the page; then the page's rows are read by id. The plain
 * `created_at` bounds are what the index range is built from; the expanded predicates settle ties.
 * Exported for the benchmark's EXPLAIN.
 */
export function keywordWindowQuery(
  db: Db,
  viewer: AuthMember | null,
  filters: ProductFilters,
  range: { offset: number; limit: number },
  end: WindowEnd | null,
  position?: { createdAt: Date; id: number },
): Knex.QueryBuilder {
  const walk = applyFilters(
    db,
    walkedAlong(db, 'products_created_status_name_index').select('id', 'created_at'),
    viewer,
    { ...filters, keyword: undefined },
  );
  applyKeywordCheck(walk, filters.keyword!, dialect.isMysql(db));
  if (position) applyCursor(walk, position);
  if (end) {
    walk
      .where('created_at', '>=', end.createdAt)
      .where((w) => w.where('created_at', '>', end.createdAt).orWhere('id', '>=', end.id));
  }
  applySort(walk, NEWEST_FIRST).offset(range.offset).limit(range.limit);
  return db
    .select('products.*')
    .from('products')
    .join(walk.as('hit'), 'hit.id', 'products.id')
    .orderBy([
      { column: 'hit.created_at', order: 'desc' },
      { column: 'hit.id', order: 'desc' },
    ]);
}

export function createProductRepository(db: Db) {
  const visible = (viewer: AuthMember | null, filters: ProductFilters) =>
    applyFilters(db, db('products').select('*'), viewer, filters);

  /**
   * The page from the newest KEYWORD_WINDOW_ROWS rows, or null when they do not hold all of it (the index
   * must answer). When fewer rows follow `position`, the walk saw them all and its answer is whole.
   */
  async function fromWindow(
    viewer: AuthMember | null,
    filters: ProductFilters,
    range: { offset: number; limit: number },
    position?: { createdAt: Date; id: number },
  ): Promise<ProductRow[] | null> {
    const last = (await keywordWindowEndQuery(db, position).first()) as
      { created_at: Knex.Value; id: number } | undefined;
    const end = last ? { createdAt: last.created_at, id: Number(last.id) } : null;
    const rows = (await keywordWindowQuery(db, viewer, filters, range, end, position)) as ProductRow[];
    return rows.length === range.limit || !end ? rows : null;
  }

  return {
    async findRow(productId: number): Promise<ProductRow | undefined> {
      return db('products').where({ id: productId }).first();
    },

    /** The fields that decide who may change a product (any status, DELETED included). */
    async findOwnership(productId: number): Promise<Pick<Product, 'id' | 'sellerId' | 'status'> | undefined> {
      const row = await db('products').where({ id: productId }).first('id', 'seller_id', 'status');
      return row ? Product.fromDatabaseJson(row) : undefined;
    },

    async isLive(productId: number): Promise<boolean> {
      return Boolean(await db('products').where({ id: productId }).whereNot('status', 'DELETED').first('id'));
    },

    /** Inserts a product row; returns its id. */
    async insert(row: Record<string, unknown>, trx?: Trx): Promise<number> {
      const [productId] = await (trx ?? db)('products').insert(row);
      return Number(productId);
    },

    /**
     * A seller's catalog edit of a live product (with a new stock, inside the stock's transaction: StockWrites). Rows
     * matched, or null when the edit sets nothing. A status follows the stock: ON_SALE asked for a product
     * without stock is SOLD_OUT (API.md), decided in the same statement.
     */
    async updateLive(
      productId: number,
      sellerId: number,
      edit: CatalogEdit,
      trx?: Trx,
    ): Promise<number | null> {
      const fields: Record<string, unknown> = {};
      if (edit.categoryId !== undefined) fields.category_id = edit.categoryId;
      if (edit.name !== undefined) fields.name = edit.name;
      if (edit.description !== undefined) fields.description = edit.description;
      if (edit.price !== undefined) fields.price = centsToDecimal(toCents(edit.price));
      if (edit.status !== undefined)
        fields.status = statusFollowingStockRaw(db, sql('?', edit.status), sql('stock_quantity'));
      if (Object.keys(fields).length === 0) return null;
      return affectedRows(
        await (trx ?? db)('products')
          .where({ id: productId, seller_id: sellerId })
          .whereNot('status', 'DELETED')
          .update(withCatalogVersion(db, { ...fields, updated_at: new Date() })),
      );
    },

    /** Rows the viewer may see, matching the filters (for a cached totalElements). */
    count(viewer: AuthMember | null, filters: ProductFilters): Promise<number> {
      return countRows(visible(viewer, filters));
    },

    /**
     * One offset page of the visible rows; `countTotal` supplies the (cached) total. A page of a keyword with
     * more than KEYWORD_WINDOW_ROWS matches is looked for in the newest rows first.
     */
    async page(
      viewer: AuthMember | null,
      filters: ProductFilters,
      sort: SortOrder,
      request: PageRequest,
      countTotal: () => Promise<number>,
    ): Promise<PageSlice<ProductRow>> {
      const offset = request.page * request.size;
      if (windowFits(filters, sort, offset + request.size)) {
        const total = await countTotal();
        if (total <= offset) return { items: [], total };
        if (total > KEYWORD_WINDOW_ROWS) {
          const rows = await fromWindow(viewer, filters, { offset, limit: request.size });
          if (rows) return { items: rows, total };
        }
      }
      return fetchPage<ProductRow>(applySort(visible(viewer, filters), sort), request, countTotal);
    },

    /** Up to `limit` visible rows by createdAt desc, id desc, after `position` when given. */
    async afterCursor(
      viewer: AuthMember | null,
      filters: ProductFilters,
      position: { createdAt: Date; id: number } | undefined,
      limit: number,
    ): Promise<ProductRow[]> {
      const sort = NEWEST_FIRST;
      // No count here to tell a rare keyword from a common one: the window is tried first for every keyword.
      if (windowFits(filters, sort, limit)) {
        const rows = await fromWindow(viewer, filters, { offset: 0, limit }, position);
        if (rows) return rows;
      }
      const q = visible(viewer, filters);
      if (position) applyCursor(q, position);
      return (await applySort(q, sort).limit(limit)) as ProductRow[];
    },

    /** ON_SALE by salesCount desc, id desc. */
    async popular(limit: number): Promise<ProductRow[]> {
      return db('products')
        .select('*')
        .where('status', 'ON_SALE')
        .orderBy([
          { column: 'sales_count', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .limit(limit);
    },
  };
}

export type ProductRepository = ReturnType<typeof createProductRepository>;
