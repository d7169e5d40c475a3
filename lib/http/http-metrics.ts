// Times every request for `http_request_duration_seconds`. Outside the error handler, so the status is the
// one the client gets; labelled with the router's matched path template (never the raw URL, whose ids
// would make one series per product), or "unmatched" for 404/405.
import type { Middleware } from 'koa';

/** Label of requests no route matched (404, 405): the raw URL would make the label set unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

export type HttpObserver = (method: string, route: string, status: number, seconds: number) => void;

export function httpMetrics(observe: HttpObserver): Middleware {
  return async function httpMetricsMiddleware(ctx, next) {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      observe(ctx.method, ctx.routerPath ?? UNMATCHED_ROUTE, ctx.status, seconds);
    }
  };
}
