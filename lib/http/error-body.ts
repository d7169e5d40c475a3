// The error body of API.md: one yup shape (its type and the OpenAPI `Error` component) and one builder of it
// (errorBody), for the error handler and the HTTP parser's refusals alike.
import * as yup from 'yup';
import { ERROR_CODES, type AppError } from '../errors';
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
