// Shared assertions of API.md's response conventions.
import type { ExecutionContext } from 'ava';
import type { ApiResponse } from './harness';

/** ISO-8601 UTC with milliseconds, the format of every time in a response. */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** API.md's error body: status and code as expected, a message, the path, a timestamp, the request id. */
export function assertError(
  t: ExecutionContext,
  res: ApiResponse,
  status: number,
  code: string,
  path?: string,
): void {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is(res.body.status, status);
  t.is(res.body.code, code);
  t.is(typeof res.body.message, 'string');
  if (path !== undefined) t.is(res.body.path, path);
  t.regex(res.body.timestamp, ISO_MS);
  t.is(res.body.requestId, res.headers.get('x-request-id'));
}
