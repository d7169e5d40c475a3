// After the router: an unknown path is 404; a known path with another method (a plain OPTIONS included)
// is 405 with `Allow`.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { MethodNotAllowedError, NotFoundError } from '../errors';

export function routeFallback(router: Router): Middleware {
  return async function routeFallbackMiddleware(ctx) {
    const match = router.match(ctx.path, ctx.method);
    const allowed = new Set<string>();
    for (const layer of match.path) for (const method of layer.methods) allowed.add(method);
    if (allowed.size > 0) throw new MethodNotAllowedError(ctx.method, [...allowed]);
    throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}`);
  };
}
