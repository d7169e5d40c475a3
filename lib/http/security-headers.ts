// Security headers. `X-Content-Type-Options: nosniff` on every response (JSON, errors, 404s, images, docs), set
// before anything runs so no path can miss it. The documentation pages (/docs and below; the router matches
// paths case-insensitively, so /DOCS too) get a Content-Security-Policy that allows only this server's own
// scripts, styles and images, and `frame-ancestors 'none'` (no clickjacking of Swagger UI's "Try it out").
import type { Middleware } from 'koa';
import { SWAGGER_INLINE_SCRIPT_HASH } from '../openapi/swagger-ui';

export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  // Swagger UI's bundle plus its one inline start script, allowed by hash.
  `script-src 'self' '${SWAGGER_INLINE_SCRIPT_HASH}'`,
  // Swagger UI and the lifecycle page set inline styles (style attributes); no script can come from them.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const DOCS_PATH = /^\/docs(\/|$)/i;

export function securityHeaders(): Middleware {
  return function securityHeadersMiddleware(ctx, next) {
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (DOCS_PATH.test(ctx.path)) {
      ctx.set('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
      ctx.set('X-Frame-Options', 'DENY'); // for browsers older than frame-ancestors
    }
    return next();
  };
}
