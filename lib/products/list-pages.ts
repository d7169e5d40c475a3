// The public catalogue's list pages, cached as the documents the route sends, and dropped as narrowly as a
// change allows. A change that may touch anything (an edit, a deletion, another instance's change of unknown
// kind) drops every page. A stock change (an order, a cancellation: stock, sales and ON_SALE <-> SOLD_OUT) drops
// the pages that show the product, and the pages whose rows or total follow stock (a status filter, the
// salesCount sort); an image change drops the pages that show the product. No other page can change: the
// public set (ON_SALE and SOLD_OUT) and the createdAt and price orders do not follow stock.
//
// A page loaded while a product it shows changed may hold the old state: it is served to the requests that
// were waiting for it, never stored (each page knows when its load started; each narrow change is stamped). A
// request that arrives after a change does not join a load that started before it (which products that load
// shows is known only once it is done): it loads afresh, so no caller gets a state older than its own write.
// A change finds its pages through an index (product -> page keys, and the keys of the pages following stock),
// not by reading every page: an order batch announces the products it changed (one call for them all).
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

/**
 * Narrow changes remembered for the loads in flight, and (product, page) pairs in the index: past this many,
 * every page is dropped instead (which empties both).
 */
export const MAX_TRACKED = 100_000;

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
  /**
   * Product id -> the keys of the pages loaded showing it (a key may since hold another page or none: dropping
   * it then costs a reload, never a stale page), and the keys of the pages following stock.
   */
  const pagesShowing = new Map<number, Set<string>>();
  const followingStock = new Set<string>();
  let indexed = 0;
  /**
   * Pages being loaded: each load's own marker, holding the clock when it started. Compared by identity, not
   * by clock: after a flush (no tick) a new load of the same key starts at the same clock as the dropped one,
   * and the dropped one's end must not remove the new one's marker (a request after the next change would
   * then join a load that started before it).
   */
  const loadingSince = new Map<string, { started: number }>();

  const index = (key: string, productIds: readonly number[], followsStock: boolean) => {
    for (const productId of productIds) {
      let keys = pagesShowing.get(productId);
      if (!keys) pagesShowing.set(productId, (keys = new Set()));
      if (!keys.has(key)) {
        keys.add(key);
        indexed++;
      }
    }
    if (followsStock) followingStock.add(key);
  };

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
    pagesShowing.clear();
    followingStock.clear();
    indexed = 0;
  };

  /** One product changed in `scope` (the same steps for each product of a call, as if each were its own call). */
  function changedOne(productId: number, scope: ProductChangeScope): void {
    if (changedAt.size >= MAX_TRACKED || indexed >= MAX_TRACKED) {
      flush();
      return;
    }
    clock += 1;
    changedAt.set(productId, clock);
    const showing = pagesShowing.get(productId);
    if (showing) {
      pagesShowing.delete(productId);
      indexed -= showing.size;
      cache.del([...showing]);
    }
    if (scope === 'stock') {
      stockChangedAt = clock;
      if (followingStock.size > 0) {
        cache.del([...followingStock]);
        followingStock.clear();
      }
    }
  }

  return {
    /** The page under `key`, loaded once for all concurrent callers when not held. */
    async get(
      key: string,
      followsStock: boolean,
      load: () => Promise<LoadedListPage>,
    ): Promise<CachedDocument> {
      // A load of this page in flight since before a change is not joined (its waiters still get it).
      if ((loadingSince.get(key)?.started ?? clock) < clock) cache.del(key);
      const page = await cache.getOrLoad(
        key,
        async () => {
          const loadStarted = clock;
          const marker = { started: loadStarted };
          loadingSince.set(key, marker);
          let loaded: LoadedListPage;
          try {
            loaded = await load();
          } finally {
            if (loadingSince.get(key) === marker) loadingSince.delete(key);
          }
          const { body, productIds } = loaded;
          index(key, productIds, followsStock);
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

    /** Products changed, all the same way: `scope` says what, when narrower than anything. */
    changed(productIds: readonly number[], scope: ProductChangeScope | undefined): void {
      if (productIds.length === 0) return;
      // Anything may have changed: no page can be trusted, whichever products it shows.
      if (scope === undefined) flush();
      else for (const productId of productIds) changedOne(productId, scope);
    },

    flush,
  };
}
