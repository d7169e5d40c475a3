// CORS for /api/ paths, per the spec's cross-origin section and API.md: an allow-list with `*` wildcards
// inside a host, the concrete requesting origin echoed (never `*`), credentials allowed, preflights
// answered here (before authentication), and nothing at all for origins that are not allowed.
import cors from '@koa/cors';
import type { Middleware } from 'koa';

export const CORS_ALLOW_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'];
// The request and response headers the OpenAPI document names (If-None-Match for the ETag'd GETs,
// Idempotent-Replayed on a replayed POST /orders), so a browser may send and read them.
export const CORS_ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'X-Request-Id',
  'If-None-Match',
];
export const CORS_EXPOSE_HEADERS = ['X-Request-Id', 'Retry-After', 'ETag', 'Allow', 'Idempotent-Replayed'];
export const CORS_MAX_AGE_SECONDS = 3600;

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/** `https://*.example.com` matches `https://a.example.com` and `https://a.b.example.com`, not `https://example.com`. */
export function originMatcher(patterns: string[]): (origin: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.includes('*')).map((p) => p.toLowerCase()));
  const wildcards = patterns
    .filter((p) => p.includes('*'))
    .map(
      (p) => new RegExp(`^${escapeRegExp(p.toLowerCase()).replace(/\*/g, '[a-z0-9-]+(?:\\.[a-z0-9-]+)*')}$`),
    );
  return (origin) => {
    const o = origin.toLowerCase();
    return exact.has(o) || wildcards.some((re) => re.test(o));
  };
}

const API_PATH = /^\/api\//i;

export function corsMiddleware(allowedOrigins: string[]): Middleware {
  const isAllowed = originMatcher(allowedOrigins);
  const koaCors = cors({
    origin: (ctx) => {
      const origin = ctx.get('Origin');
      return origin && isAllowed(origin) ? origin : '';
    },
    credentials: true,
    allowMethods: CORS_ALLOW_METHODS,
    allowHeaders: CORS_ALLOW_HEADERS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAge: CORS_MAX_AGE_SECONDS,
    keepHeadersOnError: true,
  });
  return function corsForApi(ctx, next) {
    if (!API_PATH.test(ctx.path)) return next(); // case-insensitive, as the router matches
    const origin = ctx.get('Origin');
    if (origin === '') {
      // What @koa/cors does without an Origin (most requests: not from a browser, or same-origin GETs).
      ctx.vary('Origin');
      return next();
    }
    const preflight =
      ctx.method === 'OPTIONS' && origin !== '' && ctx.get('Access-Control-Request-Method') !== '';
    if (preflight && !isAllowed(origin)) {
      // A preflight never reaches routing or authentication; a disallowed one just gets no CORS headers.
      ctx.vary('Origin');
      ctx.status = 204;
      return;
    }
    if (ctx.method === 'OPTIONS' && !preflight && origin !== '' && isAllowed(origin)) {
      // @koa/cors ignores an OPTIONS that is not a preflight; it is an ordinary request (spec rule 9), so
      // its answer (a 405) carries the CORS headers like any other response to an allowed origin.
      ctx.vary('Origin');
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
      ctx.set('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS.join(','));
      return next();
    }
    return koaCors(ctx, next);
  };
}
