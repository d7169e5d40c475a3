// Products: create/edit/delete by the owning seller, the cached detail, the offset, cursor and popular
// lists. Every change is announced on the event bus (`productChanged`); this service listens to the
// same event (orders and images emit it too) and drops its cached copies before the writer responds.
import type { AuthMember } from '../auth/tokens';
import type { Db } from '../db';
import { affectedRows, centsToDecimal, toCents } from '../db';
import { createCache } from '../cache';
import type { EventBus } from '../events';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors';
import { representation, type CachePolicy, type Representation } from '../http/etag';
import { countRows, fetchPage, pageEnvelope, type Page } from '../http/pagination';
import type { CategoryService } from '../categories/category-service';
import { Product } from './product-model';
import { productsJson, type ProductJson } from './product-json';
import { decodeCursor, encodeCursor } from './cursor';
import { applyCursor, applyFilters, applySort, parseSort, type ProductFilters } from './product-list';
import { createStockWrites, type StockWrites } from './stock-writes';
import type { CreateProductInput, CursorPage, UpdateProductInput } from './product-schemas';

export const DETAIL_CACHE_TTL_SECONDS = 300;
export const POPULAR_CACHE_TTL_SECONDS = 600;
export const COUNT_CACHE_TTL_SECONDS = 10;

export type { CursorPage };

interface CachedDetail {
  product: ProductJson;
  rep: Representation;
}

export interface ProductServiceDeps {
  db: Db;
  events: EventBus;
  categories: CategoryService;
  /** Stock and deletion writes; the orders area may supply its inventory-actor version. */
  stockWrites?: StockWrites;
}

const notFound = (productId: number) => new NotFoundError(`Product ${productId} not found`);

export function createProductService(deps: ProductServiceDeps) {
  const { db, events, categories } = deps;
  const stockWrites = deps.stockWrites ?? createStockWrites(db);
  // Cached per product id, whatever its status (visibility is decided per request, after the cache).
  const detailCache = createCache<CachedDetail>(DETAIL_CACHE_TTL_SECONDS);
  // Keyed by limit; any product change may reorder it, so any change drops every entry.
  const popularCache = createCache<Representation>(POPULAR_CACHE_TTL_SECONDS);

  // totalElements of the offset list, per filter set and viewer: a COUNT over the visible catalogue is the
  // list's dominant cost, so it runs at most once per COUNT_CACHE_TTL_SECONDS (single-flight) and is
  // recounted at once after any product change this process hears of (another process's changes show
  // within the TTL).
  const countCache = createCache<number>(COUNT_CACHE_TTL_SECONDS);

  events.on('productChanged', ({ productId }) => {
    detailCache.del(String(productId));
    popularCache.flush();
    countCache.flush();
  });

  async function loadOne(productId: number): Promise<ProductJson | null> {
    const row = await db('products').where({ id: productId }).first();
    if (!row) return null;
    const [json] = await productsJson(db, [row]);
    return json;
  }

  /** The live product a seller is about to change: 404 when unknown or deleted, 403 when another seller's. */
  async function ownedLive(seller: AuthMember, productId: number): Promise<Product> {
    const row = await db('products').where({ id: productId }).first('id', 'seller_id', 'status');
    if (!row || row.status === 'DELETED') throw notFound(productId);
    if (Number(row.seller_id) !== seller.id)
      throw new ForbiddenError('You can only change your own products');
    return Product.fromDatabaseJson(row);
  }

  async function assertCategory(categoryId: number): Promise<void> {
    if (!(await categories.exists(categoryId))) {
      throw new ValidationError('Invalid request body', [
        { field: 'categoryId', message: 'category does not exist' },
      ]);
    }
  }

  async function changed(productId: number): Promise<ProductJson> {
    await events.emit('productChanged', { productId });
    const json = await loadOne(productId);
    if (!json || json.status === 'DELETED') throw notFound(productId);
    return json;
  }

  return {
    /** Detail with its caching policy; DELETED is 404 for everyone, DRAFT only for its seller and admins. */
    async detail(
      productId: number,
      viewer: AuthMember | null,
    ): Promise<{ rep: Representation; policy: CachePolicy }> {
      // A miss throws inside the load, so unknown ids are never stored (no cache flooding with made-up ids).
      const cached = await detailCache.getOrLoad(String(productId), async () => {
        const product = await loadOne(productId);
        if (!product) throw notFound(productId);
        return { product, rep: representation(product) };
      });
      if (cached.product.status === 'DELETED') throw notFound(productId);
      if (cached.product.status === 'DRAFT') {
        const allowed =
          viewer?.role === 'ADMIN' || (viewer?.role === 'SELLER' && viewer.id === cached.product.sellerId);
        if (!allowed) throw notFound(productId);
        return { rep: cached.rep, policy: { scope: 'private' } };
      }
      // Shared caches may keep it but must revalidate (a cheap 304): after a client's own write (an order,
      // a PATCH) it must never get the old stock or price from a browser or CDN copy.
      return { rep: cached.rep, policy: { scope: 'public' } };
    },

    async create(seller: AuthMember, input: CreateProductInput): Promise<ProductJson> {
      await assertCategory(input.categoryId);
      const now = new Date();
      const status = input.status === 'DRAFT' ? 'DRAFT' : input.stockQuantity > 0 ? 'ON_SALE' : 'SOLD_OUT';
      const [productId] = await db('products').insert({
        seller_id: seller.id,
        category_id: input.categoryId,
        name: input.name,
        description: input.description ?? null,
        price: centsToDecimal(toCents(input.price)),
        stock_quantity: input.stockQuantity,
        status,
        sales_count: 0,
        created_at: now,
        updated_at: now,
      });
      return changed(Number(productId));
    },

    /**
     * A seller's edit. Plain fields (and the DRAFT/ON_SALE choice) are one guarded UPDATE; a new
     * stockQuantity goes through stockWrites, which also moves SOLD_OUT <-> ON_SALE.
     */
    async update(seller: AuthMember, productId: number, patch: UpdateProductInput): Promise<ProductJson> {
      await ownedLive(seller, productId);
      if (patch.categoryId !== undefined) await assertCategory(patch.categoryId);
      const fields: Record<string, unknown> = {};
      if (patch.categoryId !== undefined) fields.category_id = patch.categoryId;
      if (patch.name !== undefined) fields.name = patch.name;
      if (patch.description !== undefined) fields.description = patch.description;
      if (patch.price !== undefined) fields.price = centsToDecimal(toCents(patch.price));
      if (patch.status !== undefined) {
        // ON_SALE asked for a product without stock is SOLD_OUT (the system's status, API.md).
        fields.status = db.raw(
          `CASE WHEN ? = 'DRAFT' THEN 'DRAFT' WHEN stock_quantity > 0 THEN 'ON_SALE' ELSE 'SOLD_OUT' END`,
          [patch.status],
        );
      }
      if (Object.keys(fields).length > 0) {
        fields.updated_at = new Date();
        const result = await db('products')
          .where({ id: productId, seller_id: seller.id })
          .whereNot('status', 'DELETED')
          .update(fields);
        if (
          affectedRows(result) === 0 &&
          !(await db('products').where({ id: productId }).whereNot('status', 'DELETED').first('id'))
        ) {
          throw notFound(productId);
        }
      }
      if (
        patch.stockQuantity !== undefined &&
        !(await stockWrites.setStock(productId, seller.id, patch.stockQuantity))
      ) {
        throw notFound(productId); // deleted between the ownership check and the write
      }
      return changed(productId);
    },

    async remove(seller: AuthMember, productId: number): Promise<void> {
      await ownedLive(seller, productId);
      if (!(await stockWrites.softDelete(productId, seller.id))) throw notFound(productId);
      await events.emit('productChanged', { productId });
    },

    async list(
      viewer: AuthMember | null,
      query: ProductFilters & { page: number; size: number; sort: string },
    ): Promise<Page<ProductJson>> {
      const filtered = applyFilters(db('products').select('*'), viewer, query);
      const countKey = JSON.stringify([
        // What the viewer may see decides the count: the public set, a seller's own drafts, or an admin's all.
        viewer?.role === 'SELLER' ? viewer.id : viewer?.role === 'ADMIN' ? 'ADMIN' : null,
        query.keyword ?? null,
        query.categoryId ?? null,
        query.sellerId ?? null,
        query.status ?? null,
        query.minPrice ?? null,
        query.maxPrice ?? null,
      ]);
      const total = () => countCache.getOrLoad(countKey, () => countRows(filtered));
      const base = applySort(filtered, parseSort(query.sort));
      const { rows, total: totalElements } = await fetchPage<Record<string, unknown>>(base, query, total);
      return pageEnvelope(await productsJson(db, rows), query, totalElements);
    },

    /** Keyset list by createdAt desc, id desc: reads limit + 1 rows to learn whether more follow. */
    async cursorList(
      viewer: AuthMember | null,
      query: ProductFilters & { limit: number; cursor?: string },
    ): Promise<CursorPage> {
      const q = applyFilters(db('products').select('*'), viewer, query);
      if (query.cursor !== undefined) applyCursor(q, decodeCursor(query.cursor));
      const rows = (await applySort(q, { field: 'createdAt', direction: 'desc' }).limit(
        query.limit + 1,
      )) as Record<string, unknown>[];
      const hasNext = rows.length > query.limit;
      const content = await productsJson(db, rows.slice(0, query.limit));
      const last = content[content.length - 1];
      return {
        content,
        nextCursor:
          hasNext && last ? encodeCursor({ createdAt: new Date(last.createdAt), id: last.id }) : null,
        hasNext,
        size: content.length,
      };
    },

    /** ON_SALE by salesCount desc, id desc; one database load per limit per 10 minutes (single-flight). */
    popular(limit: number): Promise<Representation> {
      return popularCache.getOrLoad(String(limit), async () => {
        const rows = await db('products')
          .select('*')
          .where('status', 'ON_SALE')
          .orderBy([
            { column: 'sales_count', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(limit);
        return representation(await productsJson(db, rows));
      });
    },
  };
}

export type ProductService = ReturnType<typeof createProductService>;
