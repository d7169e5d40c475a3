// The error body of API.md: one yup shape (its type and the OpenAPI `Error` component) and one builder of it
// (errorBody), for the error handler and the HTTP parser's refusals alike.
import * as yup from 'yup';
import { ERROR_CODES, type AppError, type ErrorCode } from '../errors';
import { enumField, intField, stringField, timeField } from './response-fields';

const fieldErrorShape = yup
  .object({
    field: stringField().meta({ description: 'The offending field, e.g. `price` or `query.size`' }),
    message: stringField(),
  })
  .noUnknown()
  .meta({ component: 'FieldError' });

export const errorShape = yup
  .object({
    status: intField().min(400).max(599).meta({ description: 'The HTTP status, repeated' }),
    code: enumField(ERROR_CODES),
    message: stringField().meta({ description: 'For people; do not parse it' }),
    errors: yup
      .array(fieldErrorShape)
      .optional()
      .default(undefined)
      .meta({ description: 'One entry per invalid field (VALIDATION_ERROR and a few other 400s)' }),
    path: stringField().meta({ description: 'The request path' }),
    timestamp: timeField(),
    requestId: stringField().meta({ description: 'Also sent as the X-Request-Id header' }),
  })
  .noUnknown()
  .meta({
    component: 'Error',
    example: {
      status: 400,
      code: 'VALIDATION_ERROR',
      message: 'Invalid request body',
      errors: [{ field: 'price', message: 'price must have at most 2 decimals' }],
      path: '/api/v1/products',
      timestamp: '2026-11-22T10:41:14.123Z',
      requestId: '6f1c2a9e-4d1b-4f7a-9a55-0c7e8b1d2e3f',
    },
  });
export type ErrorBody = yup.InferType<typeof errorShape>;

/** Each code's status and a message it is answered with: the examples of the document's error responses. */
const CODE_EXAMPLES: Record<ErrorCode, readonly [status: number, message: string]> = {
  VALIDATION_ERROR: [400, 'Invalid request body'],
  BUSINESS_NUMBER_REQUIRED: [400, 'A seller must supply a business registration number'],
  INVALID_CURSOR: [400, 'cursor is not a valid cursor of this list'],
  INVALID_FILE_TYPE: [400, 'The content of "photo.png" is not a png image'],
  IMAGE_LIMIT_EXCEEDED: [400, 'A product has at most 5 images (it has 4, 2 sent)'],
  UNAUTHENTICATED: [401, 'Authentication is required'],
  INVALID_TOKEN: [401, 'Token is invalid'],
  TOKEN_EXPIRED: [401, 'Token has expired'],
  INVALID_CREDENTIALS: [401, 'E-mail or password is incorrect'],
  FORBIDDEN: [403, 'You are not allowed to do this'],
  NOT_FOUND: [404, 'Not found'],
  METHOD_NOT_ALLOWED: [405, 'Method PUT is not allowed here'],
  EMAIL_ALREADY_EXISTS: [409, 'An account with this e-mail address already exists'],
  DUPLICATE_CATEGORY: [409, 'A category named "Phones" already exists under this parent'],
  INSUFFICIENT_STOCK: [409, 'Insufficient stock for product 1 (Demo Phone X)'],
  PRODUCT_NOT_ON_SALE: [409, 'The product 1 is not on sale'],
  INVALID_STATUS_TRANSITION: [409, 'An order cannot move from PENDING to SHIPPED'],
  ORDER_NOT_CANCELLABLE: [409, 'An order in status SHIPPED cannot be cancelled'],
  IDEMPOTENCY_KEY_REUSED: [409, 'This Idempotency-Key was already used with a different request body'],
  IDEMPOTENCY_KEY_IN_PROGRESS: [
    409,
    'The first request with this Idempotency-Key is still running; retry with the same key later',
  ],
  ORDER_LIMIT_EXCEEDED: [409, 'A buyer may have at most 20 pending orders at once (you have 20)'],
  PRODUCT_QUOTA_EXCEEDED: [409, 'A seller may have at most 10000 products (not counting deleted ones)'],
  IMAGE_QUOTA_EXCEEDED: [
    409,
    "A seller's images may take at most 1073741824 bytes (1073000000 used, 900000 sent after re-encoding)",
  ],
  PAYLOAD_TOO_LARGE: [413, 'Request body is larger than 1 MB'],
  FILE_TOO_LARGE: [413, 'A file is larger than 10 MB'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'Content-Type must be application/json'],
  REQUEST_TIMEOUT: [408, 'The request did not arrive in time'],
  REQUEST_HEADERS_TOO_LARGE: [431, 'Request headers are too large'],
  TOO_MANY_REQUESTS: [429, 'Too many failed logins; try again later'],
  INTERNAL_ERROR: [500, 'An unexpected error occurred'],
  SERVICE_UNAVAILABLE: [503, 'The database is unavailable; please retry shortly'],
  COMMIT_OUTCOME_UNKNOWN: [
    503,
    'The database connection was lost while committing; retry with the same Idempotency-Key to learn the outcome',
  ],
};

/** The status an error code is answered with. */
export const statusOfCode = (code: ErrorCode): number => CODE_EXAMPLES[code][0];

/** The bad input of a VALIDATION_ERROR example: where it is, a field of it, and the path it is sent to. */
export interface InvalidField {
  where: 'body' | 'query' | 'params';
  name: string;
  path: string;
}

/**
 * An example body of the error response `status` (`404`, or a range such as `4XX`) documented as `description`:
 * the first code the description names that is answered with such a status, else the status's only code; a
 * status with several codes must name one.
 */
export function errorExample(
  status: string,
  description: string,
  request: { path: string; invalid?: InvalidField },
): ErrorBody {
  const fits = (code: ErrorCode) =>
    /^\dXX$/.test(status)
      ? String(statusOfCode(code))[0] === status[0]
      : String(statusOfCode(code)) === status;
  const known = new Set<string>(ERROR_CODES);
  const named = [...description.matchAll(/\b[A-Z][A-Z_]*[A-Z]\b/g)]
    .map((match) => match[0])
    .filter((word): word is ErrorCode => known.has(word) && fits(word as ErrorCode));
  const only = ERROR_CODES.filter(fits);
  const code = named[0] ?? (only.length === 1 ? only[0] : undefined);
  if (!code) throw new Error(`The ${status} response "${description}" names none of its codes`);
  const [codeStatus, message] = CODE_EXAMPLES[code];
  const body: ErrorBody = {
    status: codeStatus,
    code,
    message,
    path: request.path,
    timestamp: '2026-11-22T10:41:14.123Z',
    requestId: '6f1c2a9e-4d1b-4f7a-9a55-0c7e8b1d2e3f',
  };
  const invalid = request.invalid;
  if (code === 'VALIDATION_ERROR' && invalid) {
    const field = invalid.where === 'body' ? invalid.name : `${invalid.where}.${invalid.name}`;
    body.path = invalid.path;
    body.message = `Invalid request ${invalid.where}`;
    body.errors = [{ field, message: `${field} is invalid` }];
  }
  return body;
}

/** The body answering `error` to the request at `path` (the error handler's, and the HTTP parser's refusals'). */
export function errorBody(error: AppError, request: { path: string; requestId: string }): ErrorBody {
  const body: ErrorBody = {
    status: error.status,
    code: error.code,
    message: error.message,
    path: request.path,
    timestamp: new Date().toISOString(),
    requestId: request.requestId,
  };
  if (error.details?.errors) body.errors = error.details.errors;
  return body;
}
