// HTTP caching of public GETs: a cached document (serialised and hashed once, when it entered the
// in-process cache) is sent with a strong ETag and the Cache-Control its route chose; 304 when the client
// already has it, so a cache hit costs a header compare.
import type { Context } from 'koa';
import * as yup from 'yup';
import type { CachedDocument } from '../cached-document';
import { strictObject } from './validate';

/**
 * `public` responses may be stored by shared caches: for `maxAgeSeconds` without asking again, or, without
 * it, `no-cache` (stored but revalidated on every use; the ETag makes that a 304). `private` ones depend on
 * the caller and are never stored.
 */
export type CachePolicy = { scope: 'public'; maxAgeSeconds?: number } | { scope: 'private' };

function cacheControl(policy: CachePolicy): string {
  if (policy.scope === 'private') return 'private, no-store';
  return policy.maxAgeSeconds === undefined ? 'public, no-cache' : `public, max-age=${policy.maxAgeSeconds}`;
}

/** The request header of a cached GET, for a route's `headers` (read by `sendCachedDocument`). */
export const ifNoneMatchHeaders = strictObject({
  'If-None-Match': yup.string().meta({
    description: 'An ETag from an earlier response: 304 without a body when the representation is unchanged',
    example: '"3q2-7w8PdL0H6mqj9sC8dVv0Yyo"',
  }),
});

/**
 * The response headers of a cached GET (200 and 304), for a route's `responses` (OpenAPI documentation).
 * `required: false` for a route that sends them only to some callers.
 */
export function cachingResponseHeaders(cacheControlDescription: string, required = true) {
  return {
    ETag: {
      description: 'Strong validator of the JSON body; send it back in If-None-Match',
      required,
      schema: { type: 'string', pattern: '^"[A-Za-z0-9_-]+"$' },
    },
    'Cache-Control': { description: cacheControlDescription, required, schema: { type: 'string' } },
  };
}

/** RFC 9110 If-None-Match: `*`, or a list of (possibly weak) tags compared weakly. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = bare(etag);
  return ifNoneMatch.split(',').some((tag) => bare(tag) === wanted);
}

const REPLAYABLE = Symbol('replayable cached document');

/** The public cached document this request's response was sent from, if any (for the response memo). */
export function replayableDocument(ctx: Context): CachedDocument | undefined {
  return (ctx.state as Record<symbol, unknown>)[REPLAYABLE] as CachedDocument | undefined;
}

/**
 * Sends a cached document with ETag and Cache-Control; 304 without a body when the client has it. A public
 * one is offered to the response memo (response-memo.ts), which may replay this response to the same request.
 */
export function sendCachedDocument(ctx: Context, document: CachedDocument, policy: CachePolicy): void {
  if (policy.scope === 'public') (ctx.state as Record<symbol, unknown>)[REPLAYABLE] = document;
  const etag = `"${document.hash}"`;
  ctx.set('ETag', etag);
  ctx.set('Cache-Control', cacheControl(policy));
  if (etagMatches(ctx.get('If-None-Match'), etag)) {
    ctx.status = 304;
    return;
  }
  ctx.status = 200;
  // The full header value (what `ctx.type = 'application/json'` produces) without a mime lookup per request.
  ctx.set('Content-Type', 'application/json; charset=utf-8');
  ctx.body = document.json;
}
