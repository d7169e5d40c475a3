// In-process caches (node-cache) with single-flight loading: concurrent misses for one key share one
// load, so a cold cache under load reaches the database once.
import NodeCache from 'node-cache';

export interface Cache<T> {
  del(key: string | string[]): void;
  flush(): void;
  /** The cached value, or the result of one shared `load()` for all concurrent callers. */
  getOrLoad(key: string, load: () => Promise<T>): Promise<T>;
}

export function createCache<T>(ttlSeconds: number): Cache<T> {
  const store = new NodeCache({
    stdTTL: ttlSeconds,
    useClones: false,
    checkperiod: Math.min(ttlSeconds, 600),
  });
  const inFlight = new Map<string, Promise<T>>();
  // A load that started before a `del` must not write its (stale) result back.
  const generation = new Map<string, number>();
  const gen = (key: string) => generation.get(key) ?? 0;

  return {
    del(keys) {
      for (const key of Array.isArray(keys) ? keys : [keys]) {
        generation.set(key, gen(key) + 1);
        inFlight.delete(key);
        store.del(key);
      }
    },
    flush() {
      for (const key of [...store.keys(), ...inFlight.keys()]) generation.set(key, gen(key) + 1);
      inFlight.clear();
      store.flushAll();
    },
    getOrLoad(key, load) {
      const hit = store.get<T>(key);
      if (hit !== undefined) return Promise.resolve(hit);
      const pending = inFlight.get(key);
      if (pending) return pending;
      const startedAt = gen(key);
      const promise = load().then(
        (value) => {
          if (gen(key) === startedAt) store.set(key, value);
          if (inFlight.get(key) === promise) inFlight.delete(key);
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
  };
}
