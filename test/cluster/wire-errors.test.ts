// An AppError that crosses NATS comes back as the same class with the same status, code, message and headers:
// the order service keeps an Idempotency-Key claim only for CommitOutcomeUnknownError, and a duplicate's
// IDEMPOTENCY_KEY_IN_PROGRESS must keep its Retry-After. Pure: no NATS needed, so it runs on both passes.
import test from 'ava';
import {
  CommitOutcomeUnknownError,
  ConflictError,
  IdempotencyKeyInProgressError,
  ServiceUnavailableError,
  ValidationError,
  type AppError,
} from '../../lib/errors';
import { fromWireError, toWireError } from '../../lib/cluster/wire-errors';

const roundTrip = (error: AppError) => fromWireError(JSON.parse(JSON.stringify(toWireError(error))));

const cases: Array<[string, AppError]> = [
  ['a lost COMMIT', new CommitOutcomeUnknownError(3)],
  [
    'an owner that did not answer',
    new CommitOutcomeUnknownError(4, 'The owner instance did not answer in time'),
  ],
  ['a duplicate still running', new IdempotencyKeyInProgressError(2)],
  ['a refusal', new ConflictError('INSUFFICIENT_STOCK', 'Insufficient stock for product 7')],
  ['a validation error', new ValidationError('Invalid', [{ field: 'quantity', message: 'too big' }])],
  ['an outage', new ServiceUnavailableError('Shard 3 is moving; please retry', 4)],
];

for (const [what, original] of cases) {
  test(`${what} keeps its class, status, code, message and headers across the wire`, (t) => {
    const rebuilt = roundTrip(original);
    t.is(rebuilt.constructor, original.constructor);
    t.is(rebuilt.status, original.status);
    t.is(rebuilt.code, original.code);
    t.is(rebuilt.message, original.message);
    t.deepEqual(rebuilt.details?.headers, original.details?.headers);
    t.deepEqual(rebuilt.details?.errors, original.details?.errors);
  });
}
