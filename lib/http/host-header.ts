// HTTP/1.1 requires a Host header (RFC 9112 3.2: a server MUST answer 400 to a request without one). Node's own
// check answers with a bare status line, so the server leaves it to this middleware (lib/graceful-server.ts):
// the 400 then has the API's error body and an X-Request-Id like every other answer.
import type { Middleware } from 'koa';
import { ValidationError } from '../errors';

export function requireHostHeader(): Middleware {
  return function hostHeader(ctx, next) {
    const { httpVersionMajor, httpVersionMinor, headers } = ctx.req;
    if (httpVersionMajor === 1 && httpVersionMinor >= 1 && headers.host === undefined) {
      throw new ValidationError('An HTTP/1.1 request needs a Host header', [
        { field: 'Host', message: 'is required' },
      ]);
    }
    return next();
  };
}
