// The in-process cache is bounded by entries, and deleted or flushed keys leave nothing behind (a per-key
// generation map used to keep every key ever deleted: 113 MB for 500k keys while the cache was empty).
import v8 from 'node:v8';
import vm from 'node:vm';
import test from 'ava';
import { createCache } from '../../lib/cache';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

test('a full cache stops adding keys but still answers, and can still replace the keys it holds', async (t) => {
  const cache = createCache<number>(60, { maxEntries: 100 });
  for (let i = 0; i < 1000; i++) t.is(await cache.getOrLoad(`k${i}`, async () => i), i);
  t.deepEqual(cache.size(), { entries: 100, loading: 0 });
  t.is(cache.get('k0'), 0, 'the first keys are kept');
  t.is(cache.get('k999'), undefined, 'a key beyond the bound is not cached');
  cache.set('k5', 555);
  t.is(cache.get('k5'), 555, 'an existing key is replaced in a full cache');
  cache.set('new', 1);
  t.is(cache.get('new'), undefined);
  cache.del('k0');
  cache.set('new', 1);
  t.is(cache.get('new'), 1, 'room made by a delete is used again');
  t.is(cache.size().entries, 100);
  cache.close();
});

test('deleting or flushing many distinct keys retains no memory', (t) => {
  const cache = createCache<string>(60);
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 300_000; i++) {
    cache.set(`key-${i}`, 'v');
    cache.del(`key-${i}`);
  }
  for (let i = 0; i < 5_000; i++) cache.set(`flushed-${i}`, 'v');
  cache.flush();
  gc();
  const grownMb = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
  t.log(`heap grew by ${grownMb.toFixed(1)} MB after 300k deleted keys`);
  t.true(grownMb < 5, `${grownMb.toFixed(1)} MB retained`);
  t.deepEqual(cache.size(), { entries: 0, loading: 0 });
  cache.close();
});

test('a load that started before a delete does not write its stale value back', async (t) => {
  const cache = createCache<string>(60);
  let finish!: (value: string) => void;
  const slow = cache.getOrLoad('p', () => new Promise<string>((resolve) => (finish = resolve)));
  t.is(cache.size().loading, 1);
  cache.del('p');
  t.is(cache.size().loading, 0);
  finish('stale');
  t.is(await slow, 'stale', 'its caller still gets its answer');
  t.is(cache.get('p'), undefined, 'but the cache does not keep it');
  t.is(await cache.getOrLoad('p', async () => 'fresh'), 'fresh');
  t.is(cache.get('p'), 'fresh');

  // Concurrent misses share one load.
  let loads = 0;
  const values = await Promise.all(
    Array.from({ length: 10 }, () => cache.getOrLoad('q', async () => `q${++loads}`)),
  );
  t.deepEqual(new Set(values), new Set(['q1']));
  t.is(loads, 1);
  cache.close();
});

test('holds(key, value): true only while that very value is the live entry (replaced, deleted, flushed, expired: false)', async (t) => {
  const seen: string[] = [];
  const cache = createCache<{ n: number }>(1, { name: 'c', observer: (_name, result) => seen.push(result) });
  const first = await cache.getOrLoad('k', async () => ({ n: 1 }));
  t.true(cache.holds('k', first));
  t.false(cache.holds('k', { n: 1 }), 'an equal but other object');
  t.false(cache.holds('other', first));
  cache.set('k', { n: 2 });
  t.false(cache.holds('k', first), 'replaced');
  const second = cache.get('k')!;
  cache.del('k');
  t.false(cache.holds('k', second), 'deleted');
  const third = await cache.getOrLoad('k', async () => ({ n: 3 }));
  cache.flush();
  t.false(cache.holds('k', third), 'flushed');
  const fourth = await cache.getOrLoad('k', async () => ({ n: 4 }));
  t.true(cache.holds('k', fourth));
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  t.false(cache.holds('k', fourth), 'expired after its TTL');
  // A lookup that holds counts as a hit (a replayed response was served from this cache); one that fails
  // counts nothing (the request then goes to the service, which counts its own lookup).
  t.deepEqual(seen, ['miss', 'hit', 'hit', 'miss', 'miss', 'hit']); // get('k') is the second hit
  cache.close();
});

test('getOrLoad stores a loaded value only when keep() says so, and still returns it', async (t) => {
  const cache = createCache<number>(60);
  t.is(
    await cache.getOrLoad(
      'odd',
      async () => 1,
      (value) => value % 2 === 0,
    ),
    1,
  );
  t.is(cache.get('odd'), undefined);
  t.is(
    await cache.getOrLoad(
      'even',
      async () => 2,
      (value) => value % 2 === 0,
    ),
    2,
  );
  t.is(cache.get('even'), 2);
  cache.close();
});

test('flush with no entries held still forgets the loads in flight; with entries it drops them all', async (t) => {
  const cache = createCache<string>(60);
  let finish!: (value: string) => void;
  const slow = cache.getOrLoad('p', () => new Promise<string>((resolve) => (finish = resolve)));
  t.deepEqual(cache.size(), { entries: 0, loading: 1 });
  cache.flush(); // nothing stored yet: the in-flight load must still be forgotten
  t.deepEqual(cache.size(), { entries: 0, loading: 0 });
  finish('stale');
  t.is(await slow, 'stale');
  t.is(cache.get('p'), undefined, 'a load that started before the flush is not written back');

  for (const key of ['a', 'b', 'c']) cache.set(key, key);
  t.is(cache.size().entries, 3);
  cache.flush();
  t.deepEqual(cache.size(), { entries: 0, loading: 0 });
  t.is(cache.get('a'), undefined);
  cache.set('a', 'again');
  t.is(cache.get('a'), 'again', 'a flushed cache stores again');
  cache.close();
});
