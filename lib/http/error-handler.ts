// The one error handler. Maps the AppError family (and the few framework errors with a status, such as
// body-parser failures) to API.md's error body; an unavailable database is a 503 (lib/db-errors.ts);
// everything else is a logged, generic 500.
import type { Middleware } from 'koa';
import { toClientError } from '../db-errors';
import { AppError } from '../errors';
import type { Logger } from '../logger';
import { errorBody } from './error-body';

interface HttpishError {
  code?: string;
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  headers?: Record<string, string>;
}

/**
 * Reading the request body failed through the client's doing, whatever code the error carries: a body that
 * does not decode, or one the client stopped sending (raw-body's `request.aborted` carries ECONNABORTED, which
 * from a database connection would mean an outage).
 */
function fromBodyError(err: HttpishError): AppError | null {
  // A Content-Encoding whose body does not decode: zlib's codes (gzip, deflate), brotli's (ERR__ERROR_...).
  if (err.code === 'Z_DATA_ERROR' || err.code === 'Z_BUF_ERROR' || err.code?.startsWith('ERR__ERROR_')) {
    return new AppError(400, 'VALIDATION_ERROR', 'Request body could not be decoded');
  }
  // The connection closed (or timed out) before the whole body arrived; nobody may be left to answer.
  if (err.type === 'request.aborted') {
    return new AppError(400, 'VALIDATION_ERROR', 'Request body was not received in full');
  }
  return null;
}

function fromFrameworkError(err: HttpishError): AppError | null {
  const status = err.status ?? err.statusCode;
  if (!status || status >= 500) return null;
  if (status === 413) return new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body is larger than 1 MB');
  if (status === 415) return new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported request encoding');
  if (status === 400) return new AppError(400, 'VALIDATION_ERROR', 'Request body is not valid JSON');
  return null;
}

export function errorHandler(logger: Logger): Middleware {
  const log = logger.child({ component: 'ErrorHandler' });
  return async function errorHandlerMiddleware(ctx, next) {
    try {
      await next();
    } catch (err) {
      // An unreachable or timed-out database is 503 SERVICE_UNAVAILABLE with Retry-After, not a 500.
      const client = fromBodyError(err as HttpishError) ?? toClientError(err);
      let error = client instanceof AppError ? client : fromFrameworkError(err as HttpishError);
      if (!error) {
        log.error({ err }, `Unhandled error on ${ctx.method} ${ctx.path}`);
        error = new AppError(500, 'INTERNAL_ERROR', 'An unexpected error occurred');
      } else if (error.status >= 500) {
        log.error({ err }, `${error.code} on ${ctx.method} ${ctx.path}`);
      }
      // Headers other middleware attached to the error (CORS, Allow, Retry-After) still go out.
      for (const [name, value] of Object.entries({
        ...(err as HttpishError).headers,
        ...error.details?.headers,
      })) {
        ctx.set(name, value);
      }
      ctx.status = error.status;
      ctx.body = errorBody(error, { path: ctx.path, requestId: ctx.state.requestId });
    }
  };
}
