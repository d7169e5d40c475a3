// After the router: an unknown path is 404; a known path with another method (a plain OPTIONS included)
// is 405 with `Allow`. A path that a route without parameters matches is that route's alone, as in most
// routers: /products/popular is no product id, so PATCH /products/popular is 405 (Allow: HEAD, GET), not
// PATCH /products/:productId refusing the id "popular".
import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { MethodNotAllowedError, NotFoundError } from '../errors';

type Layer = Router['stack'][number];

const isStaticRoute = (layer: Layer) => layer.methods.length > 0 && layer.paramNames.length === 0;

/** The 404 or 405 for a request no route serves; the routes without parameters speak for their paths. */
function refusal(router: Router, ctx: Context): Error {
  const matched = router.match(ctx.path, ctx.method).path;
  const statics = matched.filter(isStaticRoute);
  const allowed = new Set<string>();
  for (const layer of statics.length > 0 ? statics : matched)
    for (const method of layer.methods) allowed.add(method);
  if (allowed.size > 0) return new MethodNotAllowedError(ctx.method, [...allowed]);
  return new NotFoundError(`No route for ${ctx.method} ${ctx.path}`);
}

/**
 * For a route with parameters (`path`, e.g. /api/v1/products/:productId): a check that throws the fallback's
 * 405 when a route without parameters owns the request's path (/api/v1/products/popular). Only the routes of
 * the same shape are tried (same number of segments, the same literal ones), found once on first use, when
 * every route is mounted.
 */
export function staticPathGuard(router: Router, path: string): (ctx: Context) => void {
  const segments = path.toLowerCase().split('/');
  const sameShape = (layer: Layer) => {
    const theirs = String(layer.path).toLowerCase().split('/');
    return (
      theirs.length === segments.length &&
      segments.every((segment, index) => segment.startsWith(':') || segment === theirs[index])
    );
  };
  let siblings: Layer[] | null = null;
  return (ctx) => {
    siblings ??= router.stack.filter((layer) => isStaticRoute(layer) && sameShape(layer));
    if (siblings.some((layer) => layer.match(ctx.path))) throw refusal(router, ctx);
  };
}

export function routeFallback(router: Router): Middleware {
  return async function routeFallbackMiddleware(ctx) {
    throw refusal(router, ctx);
  };
}
