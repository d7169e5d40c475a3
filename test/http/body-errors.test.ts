// Request-body failures through a real JSON route (POST /api/v1/auth/login): each answers API.md's
// error body, never a stack trace or the framework's own text.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const PATH = '/api/v1/auth/login';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The whole error body: exactly these keys (plus `errors` when given), the request id echoed. */
function assertErrorBody(
  t: any,
  res: any,
  status: number,
  code: string,
  errors?: Array<{ field: string; message: string }>,
) {
  t.is(res.status, status, res.text);
  t.regex(res.headers.get('content-type') ?? '', /application\/json/);
  const keys = [
    'code',
    'message',
    'path',
    'requestId',
    'status',
    'timestamp',
    ...(errors ? ['errors'] : []),
  ].sort();
  t.deepEqual(Object.keys(res.body).sort(), keys);
  t.is(res.body.status, status);
  t.is(res.body.code, code);
  t.true(typeof res.body.message === 'string' && res.body.message.length > 0);
  t.is(res.body.path, PATH);
  t.regex(res.body.timestamp, ISO_MS);
  t.truthy(res.headers.get('x-request-id'));
  t.is(res.body.requestId, res.headers.get('x-request-id'));
  if (errors) t.deepEqual(res.body.errors, errors);
  t.false(/at .+\(.+:\d+:\d+\)|SyntaxError|node_modules/.test(res.text), 'no stack trace or internals');
}

test('malformed JSON: 400 VALIDATION_ERROR', async (t) => {
  const res = await app.request('POST', PATH, {
    raw: '{"email": "a@example.test", "password": ',
    headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'body-errors-1' },
  });
  assertErrorBody(t, res, 400, 'VALIDATION_ERROR');
  t.is(res.body.requestId, 'body-errors-1');
});

test('a JSON body that is not an object (array, string): 400 VALIDATION_ERROR', async (t) => {
  for (const raw of ['[1,2]', '"text"']) {
    const res = await app.request('POST', PATH, { raw, headers: { 'Content-Type': 'application/json' } });
    t.is(res.status, 400, raw);
    t.is(res.body.code, 'VALIDATION_ERROR');
    t.is(res.body.requestId, res.headers.get('x-request-id'));
  }
});

test('JSON body over 1 MB: 413 PAYLOAD_TOO_LARGE', async (t) => {
  const raw = JSON.stringify({ email: 'a@example.test', password: 'x'.repeat(1024 * 1024 + 10) });
  const res = await app.request('POST', PATH, { raw, headers: { 'Content-Type': 'application/json' } });
  assertErrorBody(t, res, 413, 'PAYLOAD_TOO_LARGE');
});

test('a body just under 1 MB is parsed (and then judged by the schema)', async (t) => {
  const raw = JSON.stringify({ email: 'a@example.test', password: 'x'.repeat(1000 * 1000) });
  const res = await app.request('POST', PATH, { raw, headers: { 'Content-Type': 'application/json' } });
  assertErrorBody(t, res, 400, 'VALIDATION_ERROR', [{ field: 'password', message: 'password is too long' }]);
});

test('Content-Type text/plain with a body: 415 UNSUPPORTED_MEDIA_TYPE', async (t) => {
  const res = await app.request('POST', PATH, {
    raw: JSON.stringify({ email: 'a@example.test', password: 'Password-123' }),
    headers: { 'Content-Type': 'text/plain' },
  });
  assertErrorBody(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE');
});

test('form-encoded body: 415 UNSUPPORTED_MEDIA_TYPE', async (t) => {
  const res = await app.request('POST', PATH, {
    raw: 'email=a%40example.test&password=Password-123',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  assertErrorBody(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE');
});

test('unknown field: 400 VALIDATION_ERROR with errors [{ field, message }]', async (t) => {
  const res = await app.request('POST', PATH, {
    body: { email: 'a@example.test', password: 'Password-123', rememberMe: true },
  });
  assertErrorBody(t, res, 400, 'VALIDATION_ERROR', [{ field: 'rememberMe', message: 'unknown field' }]);
});

test('wrong field type and missing fields: 400 naming each field', async (t) => {
  const res = await app.request('POST', PATH, { body: { email: 42 } });
  t.is(res.status, 400);
  assertErrorBody(t, res, 400, 'VALIDATION_ERROR', [
    { field: 'email', message: 'email must be a string' },
    { field: 'password', message: 'password is required' },
  ]);
});
