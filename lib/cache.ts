// In-process caches (node-cache) with single-flight loading: concurrent misses for one key share one
// load, so a cold cache under load reaches the database once. Bounded by entries: a full cache serves
// what it holds and stops adding until entries expire, so a flood of distinct keys cannot grow memory.
import NodeCache from 'node-cache';

export const DEFAULT_CACHE_MAX_ENTRIES = 10_000;

export interface Cache<T> {
  get(key: string): T | undefined;
  /** Caches `value` unless the cache is full (replacing a key it holds always works). */
  set(key: string, value: T): void;
  del(key: string | string[]): void;
  flush(): void;
  /**
   * True while `key` holds exactly `value` (same object, not expired): a lookup of an entry the caller already
   * has, counted as a hit when it holds (the response memo's check that a replayed document is still current).
   */
  holds(key: string, value: T): boolean;
  /**
   * The cached value, or the result of one shared `load()` for all concurrent callers. `keep`, when given, is
   * asked as the loaded value is stored (in the same turn): false leaves it unstored (still returned).
   */
  getOrLoad(key: string, load: () => Promise<T>, keep?: (value: T) => boolean): Promise<T>;
  /** Entries held now (never more than maxEntries), and loads in flight. */
  size(): { entries: number; loading: number };
  close(): void;
}

/** Told of every lookup (metrics); a lookup that joins a load in flight counts as a miss. */
export type CacheObserver = (cache: string, result: 'hit' | 'miss') => void;

export interface CacheOptions {
  maxEntries?: number;
  /** The cache's name in metrics (`marketplace_cache_requests_total{cache}`). */
  name?: string;
  observer?: CacheObserver;
}

export function createCache<T>(ttlSeconds: number, options: CacheOptions = {}): Cache<T> {
  const maxEntries = options.maxEntries ?? DEFAULT_CACHE_MAX_ENTRIES;
  const { observer, name = 'unnamed' } = options;
  const store = new NodeCache({
    stdTTL: ttlSeconds,
    useClones: false,
    checkperiod: Math.min(ttlSeconds, 600),
    // Not node-cache's maxKeys: it refuses even to replace an existing key once full.
  });
  // Only loads in flight are remembered: a `del` removes its key's entry, so a load that started before
  // it finds itself replaced and does not write its (stale) result back. Nothing outlives its load, so
  // deleted keys leave no trace (a per-key generation counter grew with every key ever deleted).
  const inFlight = new Map<string, Promise<T>>();

  const put = (key: string, value: T) => {
    // Replacing a key never needs room; a new key in a full cache is simply not cached.
    if (store.has(key) || store.getStats().keys < maxEntries) store.set(key, value);
  };

  return {
    get(key) {
      const value = store.get<T>(key);
      observer?.(name, value === undefined ? 'miss' : 'hit');
      return value;
    },
    set: put,
    holds(key, value) {
      // node-cache's get() drops an expired entry, so a replay never outlives the TTL.
      if (store.get<T>(key) !== value) return false;
      observer?.(name, 'hit');
      return true;
    },
    del(keys) {
      for (const key of Array.isArray(keys) ? keys : [keys]) {
        inFlight.delete(key);
        store.del(key);
      }
    },
    flush() {
      inFlight.clear();
      // node-cache's flushAll also restarts its expiry timer: skipped when there is nothing to drop (every
      // product an order batch changes flushes the catalogue's list caches, mostly empty under order load).
      if (store.getStats().keys > 0) store.flushAll();
    },
    getOrLoad(key, load, keep) {
      const hit = store.get<T>(key);
      observer?.(name, hit === undefined ? 'miss' : 'hit');
      if (hit !== undefined) return Promise.resolve(hit);
      const pending = inFlight.get(key);
      if (pending) return pending;
      const promise = load().then(
        (value) => {
          if (inFlight.get(key) === promise) {
            inFlight.delete(key);
            if (keep === undefined || keep(value)) put(key, value);
          }
          return value;
        },
        (err) => {
          if (inFlight.get(key) === promise) inFlight.delete(key);
          throw err;
        },
      );
      inFlight.set(key, promise);
      return promise;
    },
    size: () => ({ entries: store.getStats().keys, loading: inFlight.size }),
    close: () => store.close(),
  };
}
