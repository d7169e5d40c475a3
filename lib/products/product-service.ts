// Products: create/edit/delete by the owning seller, the cached detail, the offset, cursor and popular
// lists. Every change is announced on the event bus (`productsChanged`); this service listens to the
// same event (orders and images emit it too, an order batch once for all its products) and drops its
// cached copies before the writer responds.
import type { AuthMember } from '../auth/tokens';
import type { Db } from '../db';
import { centsToDecimal, retryDeadlocks, toCents } from '../db';
import { createCache, type CacheObserver } from '../cache';
import type { EventBus } from '../events';
import type { ImageService } from '../images/image-service';
import type { Logger } from '../logger';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors';
import { cachedDocument, loadCachedDocument, type CachedDocument } from '../cached-document';
import { createListPages, type LoadedListPage } from './list-pages';
import { mapPage, type PageSlice } from '../query-helpers';
import type { CategoryService } from '../categories/category-service';
import { productsJson, type ProductJson } from './product-json';
import { decodeCursor, encodeCursor } from './cursor';
import { createProductRepository, parseSort, type ProductFilters } from './product-repository';
import type { StockWrites } from './stock-writes';
import { statusFollowingStock } from '../../actors/product-status';
import type { SellerQuotas } from './seller-quotas';
import type { CreateProductInput, CursorPage, UpdateProductInput } from './product-schemas';

export const DETAIL_CACHE_TTL_SECONDS = 300;
export const POPULAR_CACHE_TTL_SECONDS = 600;
export const COUNT_CACHE_TTL_SECONDS = 10;
/** The list pages of the public catalogue live as long as a cached count (their totalElements) would. */
export const LIST_CACHE_TTL_SECONDS = COUNT_CACHE_TTL_SECONDS;

export type { CursorPage };

interface CachedDetail {
  product: ProductJson;
  document: CachedDocument;
}

/** Who may see a product: anyone, or only its seller and admins (a DRAFT). */
export type ProductVisibility = 'public' | 'private';

export interface ProductServiceDeps {
  db: Db;
  events: EventBus;
  categories: CategoryService;
  /** Stock and deletion writes, serialised with the orders by the inventory (lib/inventory). */
  stockWrites: StockWrites;
  quotas: SellerQuotas;
  /** A deleted product's images are removed (rows and files), which frees the seller's image bytes. */
  images: Pick<ImageService, 'purgeDeletedProduct'>;
  logger: Logger;
  /** Told of every cache lookup (metrics). */
  cacheObserver?: CacheObserver;
  /** Public list pages kept (config: PRODUCT_LIST_CACHE_ENTRIES); 0: none, every list request reads the database. */
  listCacheEntries: number;
}

/** The offset list's query: the filters, the page and the sort. */
export type ListQuery = ProductFilters & { page: number; size: number; sort: string };

/**
 * What a viewer may see of the catalogue, as a cache key part: the public set (null: anonymous and buyers),
 * a seller's own drafts too, or an admin's everything.
 */
function visibilityKey(viewer: AuthMember | null): number | 'ADMIN' | null {
  return viewer?.role === 'SELLER' ? viewer.id : viewer?.role === 'ADMIN' ? 'ADMIN' : null;
}

/** The filters of a list query, as cache key parts (the count's and the public pages'). */
const filterKey = (query: ProductFilters) => [
  query.keyword ?? null,
  query.categoryId ?? null,
  query.sellerId ?? null,
  query.status ?? null,
  query.minPrice ?? null,
  query.maxPrice ?? null,
];

const notFound = (productId: number) => new NotFoundError(`Product ${productId} not found`);

export function createProductService(deps: ProductServiceDeps) {
  const { db, events, categories, stockWrites } = deps;
  const repository = createProductRepository(db);
  // Cached per product id, whatever its status (visibility is decided per request, after the cache).
  const detailCache = createCache<CachedDetail>(DETAIL_CACHE_TTL_SECONDS, {
    name: 'product_detail',
    observer: deps.cacheObserver,
  });
  // Keyed by limit; any product change may reorder it, so any change drops every entry.
  const popularCache = createCache<CachedDocument>(POPULAR_CACHE_TTL_SECONDS, {
    name: 'product_popular',
    observer: deps.cacheObserver,
  });

  // totalElements of the offset list, per filter set and viewer: a COUNT over the visible catalogue is the
  // list's dominant cost, so it runs at most once per COUNT_CACHE_TTL_SECONDS (single-flight) and is
  // recounted at once after any product change this process hears of (another process's changes show
  // within the TTL) that can move it: a stock change moves a product between ON_SALE and SOLD_OUT only, so
  // it recounts just the counts of a status filter, which live in a cache of their own.
  const countCache = createCache<number>(COUNT_CACHE_TTL_SECONDS, {
    name: 'product_count',
    observer: deps.cacheObserver,
  });
  const statusCountCache = createCache<number>(COUNT_CACHE_TTL_SECONDS, {
    name: 'product_count',
    observer: deps.cacheObserver,
  });

  // Whole list pages (the JSON the route sends) for viewers who see the public catalogue only, per query.
  // Every change drops the pages it may have changed (list-pages.ts: all of them, or for an order's stock
  // change the pages showing the product or following stock) before the writer's response: a list page never
  // shows an older state than the detail. Bounded: a full cache serves what it holds and adds nothing until
  // entries expire.
  const listCacheEntries = deps.listCacheEntries;
  const listPages = createListPages({
    ttlSeconds: LIST_CACHE_TTL_SECONDS,
    maxEntries: listCacheEntries,
    observer: deps.cacheObserver,
  });

  events.on('productsChanged', ({ productIds, scope }) => {
    for (const productId of productIds) detailCache.del(String(productId));
    popularCache.flush();
    if (scope === undefined) countCache.flush();
    if (scope === undefined || scope === 'stock') statusCountCache.flush();
    listPages.changed(productIds, scope);
  });
  events.on('cachesStale', () => {
    detailCache.flush();
    popularCache.flush();
    countCache.flush();
    statusCountCache.flush();
    listPages.flush();
  });

  async function loadOne(productId: number): Promise<ProductJson | null> {
    const row = await repository.findRow(productId);
    if (!row) return null;
    const [json] = await productsJson(db, [row]);
    return json;
  }

  /** The live product a seller is about to change: 404 when unknown or deleted, 403 when another seller's. */
  async function assertOwnedLive(seller: AuthMember, productId: number): Promise<void> {
    const product = await repository.findOwnership(productId);
    if (!product || product.status === 'DELETED') throw notFound(productId);
    if (product.sellerId !== seller.id) throw new ForbiddenError('You can only change your own products');
  }

  async function assertCategory(categoryId: number): Promise<void> {
    if (!(await categories.exists(categoryId))) {
      throw new ValidationError('Invalid request body', [
        { field: 'categoryId', message: 'category does not exist' },
      ]);
    }
  }

  /** Drops this instance's cached copies of the product (and, through the cluster bridge, its peers'). */
  async function announce(productId: number): Promise<void> {
    await events.emit('productsChanged', { productIds: [productId], origin: 'catalog' });
  }

  /**
   * Runs a seller's writes of a product and announces the product whatever their outcome, before an error reaches
   * the seller: a write that failed may have been applied (its answer lost: the actor's re-read after it, a
   * forwarded write's reply). Otherwise no cache here or on a peer would drop the old name, price, stock or a
   * deleted product until its TTL.
   */
  async function announcedWhateverHappens(productId: number, writes: () => Promise<void>): Promise<void> {
    try {
      await writes();
    } catch (err) {
      await announce(productId);
      throw err;
    }
  }

  async function changed(productId: number): Promise<ProductJson> {
    await announce(productId);
    const json = await loadOne(productId);
    if (!json || json.status === 'DELETED') throw notFound(productId);
    return json;
  }

  async function list(viewer: AuthMember | null, query: ListQuery): Promise<PageSlice<ProductJson>> {
    // What the viewer may see decides the count: the public set, a seller's own drafts, or an admin's all.
    const countKey = JSON.stringify([visibilityKey(viewer), ...filterKey(query)]);
    const counts = query.status === undefined ? countCache : statusCountCache;
    const total = () => counts.getOrLoad(countKey, () => repository.count(viewer, query));
    const page = await repository.page(viewer, query, parseSort(query.sort), query, total);
    return mapPage(page, (rows) => productsJson(db, rows));
  }

  return {
    /** The product and who may see it; DELETED is 404 for everyone, a DRAFT only for its seller and admins. */
    async detail(
      productId: number,
      viewer: AuthMember | null,
    ): Promise<{ document: CachedDocument; visibility: ProductVisibility }> {
      // A miss throws inside the load, so unknown ids are never stored (no cache flooding with made-up ids).
      const key = String(productId);
      const cached = await detailCache.getOrLoad(key, async () => {
        const product = await loadOne(productId);
        if (!product) throw notFound(productId);
        const entry: CachedDetail = {
          product,
          document: cachedDocument(product, () => detailCache.holds(key, entry)),
        };
        return entry;
      });
      if (cached.product.status === 'DELETED') throw notFound(productId);
      if (cached.product.status === 'DRAFT') {
        const allowed =
          viewer?.role === 'ADMIN' || (viewer?.role === 'SELLER' && viewer.id === cached.product.sellerId);
        if (!allowed) throw notFound(productId);
        return { document: cached.document, visibility: 'private' };
      }
      return { document: cached.document, visibility: 'public' };
    },

    async create(seller: AuthMember, input: CreateProductInput): Promise<ProductJson> {
      await assertCategory(input.categoryId);
      const now = new Date();
      const status = statusFollowingStock(input.status, input.stockQuantity);
      // The seller's row is locked first (the quota), then the product inserted; an order batch of this seller's
      // products holds their rows (and index gaps) and then reads the seller's row for its foreign key: InnoDB may
      // roll this transaction back as a deadlock victim, and nothing of it was written, so it runs again.
      const productId = await retryDeadlocks(() =>
        db.transaction(async (trx): Promise<number> => {
          await deps.quotas.reserveProduct(trx, seller.id);
          return repository.insert(
            {
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
            },
            trx,
          );
        }),
      );
      return changed(productId);
    },

    /**
     * A seller's edit. Plain fields (and the DRAFT/ON_SALE choice) are one guarded UPDATE; with a new
     * stockQuantity it goes along in the stock's transaction (stockWrites, which also moves SOLD_OUT <-> ON_SALE).
     */
    async update(seller: AuthMember, productId: number, patch: UpdateProductInput): Promise<ProductJson> {
      await assertOwnedLive(seller, productId);
      if (patch.categoryId !== undefined) await assertCategory(patch.categoryId);
      const { stockQuantity, ...edit } = patch;
      await announcedWhateverHappens(productId, async () => {
        if (stockQuantity === undefined) {
          const matched = await repository.updateLive(productId, seller.id, edit);
          if (matched === 0 && !(await repository.isLive(productId))) throw notFound(productId);
          return;
        }
        // The stock is written in the product's actor; the edit goes along in the stock's transaction, so a
        // failure of either leaves both as they were.
        const written = await stockWrites.setStock(productId, seller.id, stockQuantity, (trx) =>
          repository.updateLive(productId, seller.id, edit, trx),
        );
        if (!written) throw notFound(productId); // deleted between the ownership check and the write
      });
      return changed(productId);
    },

    async remove(seller: AuthMember, productId: number): Promise<void> {
      await assertOwnedLive(seller, productId);
      await announcedWhateverHappens(productId, async () => {
        if (!(await stockWrites.softDelete(productId, seller.id))) throw notFound(productId);
      });
      await announce(productId);
      // The delete stands whatever happens here: the pruner removes what this could not.
      await deps.images
        .purgeDeletedProduct(productId)
        .catch((err) =>
          deps.logger.warn({ err, productId }, 'Could not remove the images of a deleted product yet'),
        );
    },

    list,

    /** True when `viewer` sees the public catalogue only (anonymous, a buyer): its list pages are `publicList`'s. */
    seesPublicOnly(viewer: AuthMember | null): boolean {
      return visibilityKey(viewer) === null;
    },

    /**
     * A list page of the public catalogue as the document the route sends (`envelope` makes the body from the
     * page), cached per query (single-flight) until the next product change or LIST_CACHE_TTL_SECONDS.
     */
    publicList(
      query: ListQuery,
      envelope: (page: PageSlice<ProductJson>) => unknown,
    ): Promise<CachedDocument> {
      const load = async (): Promise<LoadedListPage> => {
        const page = await list(null, query);
        return { body: envelope(page), productIds: page.items.map((product) => product.id) };
      };
      if (listCacheEntries === 0) return load().then(({ body }) => cachedDocument(body));
      const sort = parseSort(query.sort);
      const key = JSON.stringify([...filterKey(query), query.page, query.size, sort.field, sort.direction]);
      return listPages.get(key, query.status !== undefined || sort.field === 'salesCount', load);
    },

    /** Keyset list by createdAt desc, id desc: reads limit + 1 rows to learn whether more follow. */
    async cursorList(
      viewer: AuthMember | null,
      query: ProductFilters & { limit: number; cursor?: string },
    ): Promise<CursorPage> {
      const position = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      const rows = await repository.afterCursor(viewer, query, position, query.limit + 1);
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
    popular(limit: number): Promise<CachedDocument> {
      return loadCachedDocument(popularCache, String(limit), async () =>
        productsJson(db, await repository.popular(limit)),
      );
    },
  };
}

export type ProductService = ReturnType<typeof createProductService>;
