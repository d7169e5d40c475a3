// The cache of verified access tokens: bounded by entries (least recently used out first) and never
// serving a token at or after its `exp`.
import test from 'ava';
import { createVerifiedTokenCache } from '../../lib/auth/verified-tokens';

const claims = (id: number) => ({ id, role: 'BUYER' as const, tokenVersion: 0 });
type Claims = ReturnType<typeof claims>;

test('a hit returns the claims until exp, and nothing from exp on (the entry is dropped)', (t) => {
  let now = 1_000_000;
  const cache = createVerifiedTokenCache<Claims>({ now: () => now });
  cache.set('a', claims(1), 1_010); // exp in seconds: 1,010,000 ms
  t.deepEqual(cache.get('a'), claims(1));
  now = 1_009_999;
  t.deepEqual(cache.get('a'), claims(1));
  now = 1_010_000;
  t.is(cache.get('a'), undefined);
  t.is(cache.size(), 0);
  // a token already expired is not cached at all
  cache.set('b', claims(2), 1_000);
  t.is(cache.get('b'), undefined);
  t.is(cache.size(), 0);
});

test('bounded by entries: the least recently used token leaves first', (t) => {
  const cache = createVerifiedTokenCache<Claims>({ maxEntries: 2, now: () => 0 });
  cache.set('a', claims(1), 60);
  cache.set('b', claims(2), 60);
  t.deepEqual(cache.get('a'), claims(1)); // a is now the most recent
  cache.set('c', claims(3), 60);
  t.is(cache.size(), 2);
  t.is(cache.get('b'), undefined);
  t.deepEqual(cache.get('a'), claims(1));
  t.deepEqual(cache.get('c'), claims(3));
  // maxEntries 0 turns caching off
  const off = createVerifiedTokenCache<Claims>({ maxEntries: 0, now: () => 0 });
  off.set('a', claims(1), 60);
  t.is(off.get('a'), undefined);
});
