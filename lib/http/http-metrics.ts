// Times every request for `http_request_duration_seconds`. Outside the error handler, so the status is the
// one the client gets; labelled with the router's matched path template (never the raw URL, whose ids
// would make one series per product), or "unmatched" for 404/405. The response memo (response-memo.ts)
// observes the requests it answers through `observeSince` too.
import type { Middleware } from 'koa';

/** Label of requests no route matched (404, 405): the raw URL would make the label set unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

export type HttpObserver = (method: string, route: string, status: number, seconds: number) => void;

/** One observation of a request that started at `started` (process.hrtime.bigint()). */
export function observeSince(
  observe: HttpObserver,
  method: string,
  route: string | undefined,
  status: number,
  started: bigint,
): void {
  observe(method, route ?? UNMATCHED_ROUTE, status, Number(process.hrtime.bigint() - started) / 1e9);
}

export function httpMetrics(observe: HttpObserver): Middleware {
  return async function httpMetricsMiddleware(ctx, next) {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      observeSince(observe, ctx.method, ctx.routerPath, ctx.status, started);
    }
  };
}
