// A JSON value serialised ONCE, with a hash of exactly those bytes: what the in-process caches keep of a
// public read, so a cache hit costs neither a JSON.stringify nor a hash per request (the HTTP layer turns
// the hash into an ETag).
import crypto from 'node:crypto';

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
