// The public catalogue's list pages, cached as the documents the route sends, and dropped as narrowly as a
// change allows. A change that may touch anything (an edit, a deletion, another instance's change of unknown
// kind) drops every page. A stock change (an order, a cancellation: stock, sales and ON_SALE <-> SOLD_OUT) drops
// the pages that show the product, and the pages whose rows or total follow stock (a status filter, the
// salesCount sort); an image change drops the pages that show the product. No other page can change: the
// public set (ON_SALE and SOLD_OUT) and the createdAt and price orders do not follow stock.
//
// A page loaded while a product it shows changed may hold the old state: it is served to the requests that
// were waiting for it, never stored (each page knows when its load started; each narrow change is stamped).
import { createCache, type CacheObserver } from '../cache';
import { cachedDocument, type CachedDocument } from '../cached-document';
import type { ProductChangeScope } from '../events';

interface ListPage {
  document: CachedDocument;
  productIds: ReadonlySet<number>;
  /** Its rows or total follow stock: a status filter, or sorted by salesCount. */
  followsStock: boolean;
  /** The change clock when its load started. */
  loadStarted: number;
}

/** What one page's load gives: the body the route sends and the products it shows. */
export interface LoadedListPage {
  body: unknown;
  productIds: readonly number[];
}

/** Narrow changes remembered for the loads in flight; past this many, every page is dropped instead. */
const MAX_TRACKED_CHANGES = 10_000;

export function createListPages(options: {
  ttlSeconds: number;
  maxEntries: number;
  observer?: CacheObserver;
}) {
  const cache = createCache<ListPage>(options.ttlSeconds, {
    name: 'product_list',
    observer: options.observer,
    maxEntries: options.maxEntries,
  });
  let clock = 0;
  /** Product id -> the clock of its last narrow change. */
  const changedAt = new Map<number, number>();
  let stockChangedAt = 0;

  const changedSinceLoad = (page: ListPage): boolean => {
    if (page.followsStock && stockChangedAt > page.loadStarted) return true;
    for (const productId of page.productIds) {
      if ((changedAt.get(productId) ?? 0) > page.loadStarted) return true;
    }
    return false;
  };

  const flush = () => {
    cache.flush(); // loads in flight included: none of them is stored
    changedAt.clear();
  };

  return {
    /** The page under `key`, loaded once for all concurrent callers when not held. */
    async get(
      key: string,
      followsStock: boolean,
      load: () => Promise<LoadedListPage>,
    ): Promise<CachedDocument> {
      const page = await cache.getOrLoad(
        key,
        async () => {
          const loadStarted = clock;
          const { body, productIds } = await load();
          const entry: ListPage = {
            productIds: new Set(productIds),
            followsStock,
            loadStarted,
            document: cachedDocument(body, () => cache.holds(key, entry)),
          };
          return entry;
        },
        (entry) => !changedSinceLoad(entry),
      );
      return page.document;
    },

    /** A product changed: `scope` says what, when narrower than anything. */
    changed(productId: number, scope: ProductChangeScope | undefined): void {
      if (scope === undefined || changedAt.size >= MAX_TRACKED_CHANGES) {
        flush();
        return;
      }
      clock += 1;
      changedAt.set(productId, clock);
      if (scope === 'stock') stockChangedAt = clock;
      cache.delWhere(
        (_key, page) =>
          page !== undefined && (page.productIds.has(productId) || (scope === 'stock' && page.followsStock)),
      );
    },

    flush,
  };
}
