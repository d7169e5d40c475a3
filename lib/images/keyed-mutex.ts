// Runs tasks one at a time per key (here: per product) inside this process. The database guard in the
// image service is what holds across processes; this keeps one process from even trying in parallel.
export function createKeyedMutex<K>() {
  const tails = new Map<K, Promise<unknown>>();

  return async function runExclusive<T>(key: K, task: () => Promise<T>): Promise<T> {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    try {
      return await run;
    } finally {
      // The last task of a key removes the entry, so the map follows the active keys only.
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}
