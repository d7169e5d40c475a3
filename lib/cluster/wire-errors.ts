// AppErrors across NATS: the owner of a shard sends its error's status, code, message and details; the
// caller rebuilds an error of the same class, so the HTTP answer is the one the owner would have given.
import {
  AppError,
  BadRequestError,
  CommitOutcomeUnknownError,
  ConflictError,
  ForbiddenError,
  IdempotencyKeyInProgressError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthenticatedError,
  UnsupportedMediaTypeError,
  ValidationError,
  type ErrorCode,
  type FieldError,
} from '../errors';

export interface WireError {
  status: number;
  code: string;
  message: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
}

export function toWireError(error: AppError): WireError {
  return {
    status: error.status,
    code: error.code,
    message: error.message,
    ...(error.details?.errors ? { errors: error.details.errors } : {}),
    ...(error.details?.headers ? { headers: error.details.headers } : {}),
  };
}

function retryAfter(wire: WireError): number | undefined {
  const value = Number(wire.headers?.['Retry-After']);
  return Number.isFinite(value) ? value : undefined;
}

/** The AppError a wire error describes; statuses without a class of their own stay a plain AppError. */
export function fromWireError(wire: WireError): AppError {
  switch (wire.status) {
    case 400:
      return wire.errors || wire.code === 'VALIDATION_ERROR'
        ? new ValidationError(
            wire.message,
            wire.errors ?? [],
            wire.code as ConstructorParameters<typeof ValidationError>[2],
          )
        : new BadRequestError(wire.code as ConstructorParameters<typeof BadRequestError>[0], wire.message);
    case 401:
      return new UnauthenticatedError(
        wire.code as ConstructorParameters<typeof UnauthenticatedError>[0],
        wire.message,
      );
    case 403:
      return new ForbiddenError(wire.message);
    case 404:
      return new NotFoundError(wire.message);
    case 409:
      if (wire.code === 'IDEMPOTENCY_KEY_IN_PROGRESS')
        return new IdempotencyKeyInProgressError(retryAfter(wire) ?? 1);
      return new ConflictError(wire.code as ConstructorParameters<typeof ConflictError>[0], wire.message);
    case 413:
      return new PayloadTooLargeError(
        wire.code as ConstructorParameters<typeof PayloadTooLargeError>[0],
        wire.message,
      );
    case 415:
      return new UnsupportedMediaTypeError(wire.message);
    case 429:
      return new TooManyRequestsError(wire.message, retryAfter(wire) ?? 1);
    case 503:
      // The caller keeps its Idempotency-Key claim on this one (the orders may exist): same class needed.
      if (wire.code === 'COMMIT_OUTCOME_UNKNOWN') {
        const error = new CommitOutcomeUnknownError(retryAfter(wire) ?? 1);
        error.message = wire.message; // the owner's words, whatever the cause it named
        return error;
      }
      return new ServiceUnavailableError(wire.message, retryAfter(wire));
    default:
      return new AppError(wire.status, wire.code as ErrorCode, wire.message, {
        ...(wire.errors ? { errors: wire.errors } : {}),
        ...(wire.headers ? { headers: wire.headers } : {}),
      });
  }
}
