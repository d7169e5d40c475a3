// The response memo: answers repeated anonymous GETs of cached documents (GET /api/v1/categories,
// /api/v1/products/popular, /api/v1/products/:id) at the HTTP server's request listener, before Koa, by
// replaying what Koa's pipeline answered to the same URL. Koa stays the one definition of every response:
// the memo only records 200s the pipeline sent from a public cached document (lib/http/etag.ts) and replays
// them only while that document is still its cache's current entry (CachedDocument.current), so every way
// the caches are invalidated (local writes, cluster events, cachesStale, TTL) ends the replay too.
//
// A replayed request keeps the per-request contracts: its own X-Request-Id (requestIdFor), the same access
// line (accessLog) and request metrics (observeSince), 304 on a matching If-None-Match (etagMatches); the
// other headers (security headers, Vary, ETag, Cache-Control, Content-Type/Length) are the pipeline's own.
// Only requests whose answer cannot depend on anything but the URL are eligible: GET without Authorization
// (visibility depends on the viewer) and without Origin (CORS). Everything else, and any error here, goes
// to Koa.
import type http from 'node:http';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';
import { etagMatches, replayableDocument } from './etag';
import { observeSince, type HttpObserver } from './http-metrics';
import { accessLog, requestIdFor } from './request-id';

export const DEFAULT_RESPONSE_MEMO_ENTRIES = 1_000;
/**
 * The bodies' bytes held at most. Entries are keyed by the URL as sent, so many spellings of one request (query
 * parameters reordered, `page=00`, parameters a route ignores) each hold a copy: counted per entry, the memo
 * stays bounded whatever the URLs and the documents' sizes.
 */
export const DEFAULT_RESPONSE_MEMO_BYTES = 64 * 1024 * 1024;

/** Headers a 304 does not carry (Koa removes them when the status is set to 304). */
const NOT_ON_304 = new Set(['content-type', 'content-length', 'transfer-encoding']);

interface Entry {
  /** Koa's ctx.path and the router's template, for the access line and the metrics labels. */
  path: string;
  route: string;
  etag: string;
  /** Header name/value pairs as the pipeline set them (its name case and order), without X-Request-Id. */
  headers: string[];
  headers304: string[];
  body: Buffer;
  current: () => boolean;
}

export interface ResponseMemo {
  /** Koa middleware, first in the chain: records the pipeline's eligible responses. */
  record: Middleware;
  /** The server's request listener: replays a current entry, or hands the request to `pipeline`. */
  listener(pipeline: http.RequestListener): http.RequestListener;
  /** Entries held, their bodies' bytes, and requests answered by replay since start. */
  stats(): { entries: number; bytes: number; replays: number };
}

export interface ResponseMemoDeps {
  logger: Logger;
  observe: HttpObserver;
  maxEntries?: number;
  maxBytes?: number;
}

function eligible(req: http.IncomingMessage): boolean {
  return (
    req.method === 'GET' &&
    req.headers.authorization === undefined &&
    req.headers.origin === undefined &&
    // Koa refuses a request without one (lib/http/host-header.ts)
    req.headers.host !== undefined
  );
}

export function createResponseMemo(deps: ResponseMemoDeps): ResponseMemo {
  const maxEntries = deps.maxEntries ?? DEFAULT_RESPONSE_MEMO_ENTRIES;
  const maxBytes = deps.maxBytes ?? DEFAULT_RESPONSE_MEMO_BYTES;
  const log = accessLog(deps.logger);
  // Keyed by the raw request target (path and query exactly as sent); Map order = least recently used first.
  const entries = new Map<string, Entry>();
  let bytes = 0;
  let replays = 0;

  function drop(key: string): void {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    bytes -= entry.body.length;
  }

  const record: Middleware = async function responseMemoRecorder(ctx, next) {
    await next();
    const document = replayableDocument(ctx);
    if (!document?.current || ctx.status !== 200 || !eligible(ctx.req) || ctx.body !== document.json) return;
    if (ctx.routerPath === undefined || ctx.res.headersSent) return;
    const headers: string[] = [];
    const headers304: string[] = [];
    // Node >= 15.13 keeps the names as set (the types here predate it): replayed with the same case.
    const res = ctx.res as typeof ctx.res & { getRawHeaderNames(): string[] };
    for (const name of res.getRawHeaderNames()) {
      const lower = name.toLowerCase();
      if (lower === 'x-request-id') continue;
      const value = ctx.res.getHeader(lower);
      if (typeof value !== 'string' && typeof value !== 'number') return; // multi-valued: not worth it
      headers.push(name, String(value));
      if (!NOT_ON_304.has(lower)) headers304.push(name, String(value));
    }
    const body = Buffer.from(document.json);
    if (body.length > maxBytes || maxEntries <= 0) return;
    const key = ctx.originalUrl;
    drop(key);
    // Least recently used first, until this entry fits both bounds.
    while (entries.size >= maxEntries || (entries.size > 0 && bytes + body.length > maxBytes)) {
      drop(entries.keys().next().value as string);
    }
    entries.set(key, {
      path: ctx.path,
      route: ctx.routerPath,
      etag: `"${document.hash}"`,
      headers,
      headers304,
      body,
      current: document.current,
    });
    bytes += body.length;
  };

  function replay(entry: Entry, req: http.IncomingMessage, res: http.ServerResponse): void {
    const started = process.hrtime.bigint();
    const sent = req.headers['x-request-id'];
    const requestId = requestIdFor(typeof sent === 'string' ? sent : '');
    const notModified = etagMatches(req.headers['if-none-match'] ?? '', entry.etag);
    const status = notModified ? 304 : 200;
    // X-Request-Id first, as the pipeline sets it first.
    res.writeHead(status, ['X-Request-Id', requestId, ...(notModified ? entry.headers304 : entry.headers)]);
    if (notModified) res.end();
    else res.end(entry.body);
    replays++;
    log(requestId, 'GET', entry.path, status, started);
    observeSince(deps.observe, 'GET', entry.route, status, started);
  }

  return {
    record,
    listener(pipeline) {
      return function responseMemoListener(req, res) {
        if (entries.size > 0 && eligible(req)) {
          const key = req.url ?? '';
          const entry = entries.get(key);
          if (entry) {
            try {
              if (entry.current()) {
                // most recently used last: a burst of other URLs drops the cold entries first
                entries.delete(key);
                entries.set(key, entry);
                return replay(entry, req, res);
              }
              drop(key);
            } catch {
              // Never a 500 from here: an entry that fails is dropped and Koa answers (if nothing was sent).
              drop(key);
              if (res.headersSent) return;
            }
          }
        }
        return pipeline(req, res);
      };
    },
    stats: () => ({ entries: entries.size, bytes, replays }),
  };
}
