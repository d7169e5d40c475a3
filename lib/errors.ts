// The AppError family: every error a client may see. The global error handler maps these (and only
// these) to the error body of API.md; anything else becomes a generic 500.

/** Every `code` an error body can carry (the OpenAPI document lists them as the enum of Error.code). */
export const ERROR_CODES = [
  'VALIDATION_ERROR',
  'BUSINESS_NUMBER_REQUIRED',
  'INVALID_CURSOR',
  'INVALID_FILE_TYPE',
  'IMAGE_LIMIT_EXCEEDED',
  'UNAUTHENTICATED',
  'INVALID_TOKEN',
  'TOKEN_EXPIRED',
  'INVALID_CREDENTIALS',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'EMAIL_ALREADY_EXISTS',
  'DUPLICATE_CATEGORY',
  'INSUFFICIENT_STOCK',
  'PRODUCT_NOT_ON_SALE',
  'INVALID_STATUS_TRANSITION',
  'ORDER_NOT_CANCELLABLE',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_PROGRESS',
  'ORDER_LIMIT_EXCEEDED',
  'PRODUCT_QUOTA_EXCEEDED',
  'IMAGE_QUOTA_EXCEEDED',
  'PAYLOAD_TOO_LARGE',
  'FILE_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'REQUEST_TIMEOUT',
  'REQUEST_HEADERS_TOO_LARGE',
  'TOO_MANY_REQUESTS',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
  'COMMIT_OUTCOME_UNKNOWN',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: { errors?: FieldError[]; headers?: Record<string, string> },
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends AppError {
  constructor(
    message: string,
    errors: FieldError[] = [],
    code: 'VALIDATION_ERROR' | 'BUSINESS_NUMBER_REQUIRED' = 'VALIDATION_ERROR',
  ) {
    super(400, code, message, { errors });
  }
}

export class BadRequestError extends AppError {
  constructor(code: 'INVALID_CURSOR' | 'INVALID_FILE_TYPE' | 'IMAGE_LIMIT_EXCEEDED', message: string) {
    super(400, code, message);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(
    code: 'UNAUTHENTICATED' | 'INVALID_TOKEN' | 'TOKEN_EXPIRED' | 'INVALID_CREDENTIALS',
    message: string,
  ) {
    super(401, code, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'You are not allowed to do this') {
    super(403, 'FORBIDDEN', message);
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found') {
    super(404, 'NOT_FOUND', message);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(method: string, allowed: string[]) {
    super(405, 'METHOD_NOT_ALLOWED', `Method ${method} is not allowed here`, {
      headers: { Allow: allowed.join(', ') },
    });
  }
}

export class ConflictError extends AppError {
  constructor(
    code:
      | 'EMAIL_ALREADY_EXISTS'
      | 'DUPLICATE_CATEGORY'
      | 'INSUFFICIENT_STOCK'
      | 'PRODUCT_NOT_ON_SALE'
      | 'INVALID_STATUS_TRANSITION'
      | 'ORDER_NOT_CANCELLABLE'
      | 'IDEMPOTENCY_KEY_REUSED'
      | 'ORDER_LIMIT_EXCEEDED'
      | 'PRODUCT_QUOTA_EXCEEDED'
      | 'IMAGE_QUOTA_EXCEEDED',
    message: string,
  ) {
    super(409, code, message);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(code: 'PAYLOAD_TOO_LARGE' | 'FILE_TOO_LARGE', message: string) {
    super(413, code, message);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(message: string) {
    super(415, 'UNSUPPORTED_MEDIA_TYPE', message);
  }
}

export class TooManyRequestsError extends AppError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, 'TOO_MANY_REQUESTS', message, { headers: { 'Retry-After': String(retryAfterSeconds) } });
  }
}

/** A passing condition (a contended product, a duplicate request still running): retrying soon will do. */
export class ServiceUnavailableError extends AppError {
  constructor(
    message = 'Service unavailable',
    readonly retryAfterSeconds = 1,
  ) {
    super(503, 'SERVICE_UNAVAILABLE', message, { headers: { 'Retry-After': String(retryAfterSeconds) } });
  }
}

/** A duplicate of a request that is still running (Idempotency-Key): retry later for its result. */
export class IdempotencyKeyInProgressError extends AppError {
  constructor(retryAfterSeconds: number) {
    super(
      409,
      'IDEMPOTENCY_KEY_IN_PROGRESS',
      'The first request with this Idempotency-Key is still running; retry with the same key later',
      { headers: { 'Retry-After': String(retryAfterSeconds) } },
    );
  }
}

/**
 * The connection was lost while the database committed: the orders may or may not exist, and it could
 * not be checked. Retrying with the same Idempotency-Key answers the truth and never orders twice.
 */
export class CommitOutcomeUnknownError extends AppError {
  constructor(retryAfterSeconds: number, why = 'The database connection was lost while committing') {
    super(503, 'COMMIT_OUTCOME_UNKNOWN', `${why}; retry with the same Idempotency-Key to learn the outcome`, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
  }
}
