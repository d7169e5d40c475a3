// First middleware: assigns the request id (API.md: a client's X-Request-Id of 1-64 chars [A-Za-z0-9._-]
// is reused, anything else replaced by a UUID), runs the rest of the request inside its
// AsyncLocalStorage context, and writes the one access-log line when the request ends. The response memo
// (response-memo.ts) uses the same two functions for the requests it answers.
import crypto from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';
import { runWithContext } from '../request-context';
import { answeredBeforeApp } from './client-error';

const VALID_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The request's id: the client's X-Request-Id when valid ('' when absent), otherwise a new UUID. */
export function requestIdFor(sent: string): string {
  return VALID_REQUEST_ID.test(sent) ? sent : crypto.randomUUID();
}

/** Writes the access-log line of a request that started at `started` (process.hrtime.bigint()). */
export type AccessLog = (
  requestId: string,
  method: string,
  path: string,
  status: number,
  started: bigint,
) => void;

export function accessLog(logger: Logger): AccessLog {
  const httpLog = logger.child({ component: 'HttpLogger' });
  return (requestId, method, path, status, started) => {
    // Path only: query strings never reach the log. The line is built only when INFO is on (bunyan's
    // info() without arguments says whether it is).
    if (httpLog.info()) {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      httpLog.info({ requestId }, `${method} ${path} ${status} ${ms.toFixed(1)}ms`);
    }
  };
}

export function requestIdAndAccessLog(logger: Logger): Middleware {
  const log = accessLog(logger);
  return async function requestIdMiddleware(ctx, next) {
    const requestId = requestIdFor(ctx.get('X-Request-Id'));
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    await runWithContext({ requestId }, async () => {
      try {
        await next();
      } finally {
        // A body too slow to arrive was answered 408 by the server's clientError listener, not by the app.
        log(requestId, ctx.method, ctx.path, answeredBeforeApp(ctx.req) ?? ctx.status, started);
      }
    });
  };
}
