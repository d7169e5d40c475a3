// First middleware: assigns the request id (API.md: a client's X-Request-Id of 1-64 chars [A-Za-z0-9._-]
// is reused, anything else replaced by a UUID), runs the rest of the request inside its
// AsyncLocalStorage context, and writes the one access-log line when the request ends.
import crypto from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';
import { runWithContext } from '../request-context';

const VALID_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function requestIdAndAccessLog(logger: Logger): Middleware {
  const httpLog = logger.child({ component: 'HttpLogger' });
  return async function requestIdMiddleware(ctx, next) {
    const sent = ctx.get('X-Request-Id');
    const requestId = VALID_REQUEST_ID.test(sent) ? sent : crypto.randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    await runWithContext({ requestId }, async () => {
      try {
        await next();
      } finally {
        // Path only: query strings never reach the log. The line is built only when INFO is on (bunyan's
        // info() without arguments says whether it is).
        if (httpLog.info()) {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          httpLog.info({ requestId }, `${ctx.method} ${ctx.path} ${ctx.status} ${ms.toFixed(1)}ms`);
        }
      }
    });
  };
}
