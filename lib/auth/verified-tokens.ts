// A small LRU of access tokens already verified (signature, algorithm, issuer, audience, claims), keyed by
// the token string: a client repeats its token on every request, and HMAC verification plus JSON parsing
// was a visible part of an order's CPU. An entry never outlives its token's `exp` (a hit after it is
// dropped and the token verified afresh, which answers TOKEN_EXPIRED), and the LRU is bounded by entries.
// Only verification is cached: the member's role and token version are still checked on every request.
// `Claims`: what verification returned (lib/auth/tokens.ts caches its AccessClaims), kept as given.

export const DEFAULT_VERIFIED_TOKEN_ENTRIES = 10_000;

interface Entry<Claims> {
  claims: Claims;
  /** jsonwebtoken's rule: expired once `now >= exp * 1000`. */
  expiresAtMs: number;
}

export function createVerifiedTokenCache<Claims>(options: { maxEntries?: number; now?: () => number } = {}) {
  const maxEntries = options.maxEntries ?? DEFAULT_VERIFIED_TOKEN_ENTRIES;
  const now = options.now ?? Date.now;
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recently used first.
  const entries = new Map<string, Entry<Claims>>();

  return {
    get(token: string): Claims | undefined {
      const entry = entries.get(token);
      if (!entry) return undefined;
      entries.delete(token);
      if (now() >= entry.expiresAtMs) return undefined;
      entries.set(token, entry);
      return entry.claims;
    },
    set(token: string, claims: Claims, exp: number): void {
      const expiresAtMs = exp * 1000;
      if (maxEntries <= 0 || now() >= expiresAtMs) return;
      entries.delete(token);
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
      entries.set(token, { claims, expiresAtMs });
    },
    size: () => entries.size,
  };
}
