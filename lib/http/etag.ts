// HTTP caching of public GETs: a representation is serialised and hashed ONCE (when it enters the
// in-process cache), so a cache hit costs a header compare, not a JSON.stringify + hash per request.
import crypto from 'node:crypto';
import type { Context } from 'koa';

export interface Representation {
  /** The JSON text sent as the body. */
  json: string;
  /** Strong ETag: a hash of exactly those bytes. */
  etag: string;
}

export function representation(value: unknown): Representation {
  const json = JSON.stringify(value);
  return { json, etag: `"${crypto.createHash('sha1').update(json).digest('base64url')}"` };
}

/** `public` responses may be stored by shared caches for `maxAgeSeconds`; `private` ones depend on the caller. */
export type CachePolicy = { scope: 'public'; maxAgeSeconds: number } | { scope: 'private' };

/** RFC 9110 If-None-Match: `*`, or a list of (possibly weak) tags compared weakly. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = bare(etag);
  return ifNoneMatch.split(',').some((tag) => bare(tag) === wanted);
}

/** Sends a cached representation with ETag and Cache-Control; 304 without a body when the client has it. */
export function sendRepresentation(ctx: Context, rep: Representation, policy: CachePolicy): void {
  ctx.set('ETag', rep.etag);
  ctx.set(
    'Cache-Control',
    policy.scope === 'public' ? `public, max-age=${policy.maxAgeSeconds}` : 'private, no-store',
  );
  if (etagMatches(ctx.get('If-None-Match'), rep.etag)) {
    ctx.status = 304;
    return;
  }
  ctx.status = 200;
  ctx.type = 'application/json';
  ctx.body = rep.json;
}
