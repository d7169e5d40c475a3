// A JSON value serialised ONCE, with a hash of exactly those bytes: what the in-process caches keep of a
// public read, so a cache hit costs neither a JSON.stringify nor a hash per request (the HTTP layer turns
// the hash into an ETag).
import crypto from 'node:crypto';
import type { Cache } from './cache';

export interface CachedDocument {
  /** The JSON text. */
  json: string;
  /** sha1 of `json`, base64url. */
  hash: string;
  /**
   * True while the cache entry this document was loaded into still holds it (not replaced, deleted, flushed
   * or expired). The response memo (lib/http/response-memo.ts) replays a response only while this holds, so
   * every invalidation of the cache invalidates the replay too. Absent: the response is never replayed.
   */
  current?: () => boolean;
}

export function cachedDocument(value: unknown, current?: () => boolean): CachedDocument {
  const json = JSON.stringify(value);
  return { json, hash: crypto.createHash('sha1').update(json).digest('base64url'), current };
}

/**
 * The document of `load()`'s value in `cache` under `key` (single-flight), current while that entry still holds
 * it: how a cached public read gets its `current` check. (A cache whose entries wrap a document, like the
 * product detail's, makes the check against its own entry.)
 */
export function loadCachedDocument(
  cache: Cache<CachedDocument>,
  key: string,
  load: () => Promise<unknown>,
): Promise<CachedDocument> {
  return cache.getOrLoad(key, async () => {
    const document: CachedDocument = cachedDocument(await load(), () => cache.holds(key, document));
    return document;
  });
}
