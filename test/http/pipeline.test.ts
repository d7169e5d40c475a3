import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import test from 'ava';
import Koa from 'koa';
import { errorHandler } from '../../lib/http/error-handler';
import { requestIdAndAccessLog } from '../../lib/http/request-id';
import { createLogger } from '../../lib/logger';
import {
  createTestDatabase,
  DB_KIND,
  LogCollector,
  request,
  startTestApp,
  type TestApp,
} from '../helpers/harness';
import { startTcpProxy } from '../helpers/tcp-proxy';
import { until } from '../helpers/until';
import { createMember, createProduct } from '../helpers/factories';
import { assertError } from '../helpers/assertions';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ logLevel: 'info' });
});
test.after.always(async () => {
  await app?.close();
});

test('every response carries a generated UUID X-Request-Id', async (t) => {
  const res = await app.request('GET', '/health/live');
  t.regex(res.headers.get('x-request-id') ?? '', UUID);
});

test('a valid client X-Request-Id is reused, an invalid one replaced', async (t) => {
  const valid = 'client-id_1.2';
  t.is(
    (await app.request('GET', '/health/live', { headers: { 'X-Request-Id': valid } })).headers.get(
      'x-request-id',
    ),
    valid,
  );
  const longest = 'a'.repeat(64);
  t.is(
    (await app.request('GET', '/health/live', { headers: { 'X-Request-Id': longest } })).headers.get(
      'x-request-id',
    ),
    longest,
  );
  for (const bad of ['a'.repeat(65), 'has space', 'semi;colon', 'ünïcode']) {
    const res = await app.request('GET', '/health/live', {
      headers: { 'X-Request-Id': encodeURI(bad) === bad ? bad : encodeURIComponent(bad) },
    });
    t.regex(res.headers.get('x-request-id') ?? '', UUID, bad);
  }
});

test('one access-log line per request in the spec format, with the request id', async (t) => {
  const id = `log-line-${Date.now()}`;
  await app.request('GET', '/api/v1/products?keyword=secret-in-query', { headers: { 'X-Request-Id': id } });
  const lines = app.logs.lines.filter((line) => line.includes(`[${id}]`));
  t.is(lines.length, 1);
  t.regex(
    lines[0],
    /^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\] \[INFO\] \[log-line-\d+\] \[HttpLogger\] GET \/api\/v1\/products 200 \d+\.\dms$/,
  );
  t.false(app.logs.text.includes('secret-in-query'), 'query strings are not logged');
});

test('Authorization values never reach the logs', async (t) => {
  await app.request('GET', '/health/live', { headers: { Authorization: 'Bearer top.secret.value' } });
  t.false(app.logs.text.includes('top.secret.value'));
});

test('unknown route: 404 NOT_FOUND in the error shape', async (t) => {
  const res = await app.request('GET', '/api/v1/does-not-exist', { headers: { 'X-Request-Id': 'nf-1' } });
  t.is(res.status, 404);
  t.is(res.headers.get('content-type'), 'application/json; charset=utf-8');
  t.deepEqual(Object.keys(res.body).sort(), ['code', 'message', 'path', 'requestId', 'status', 'timestamp']);
  t.like(res.body, { status: 404, code: 'NOT_FOUND', path: '/api/v1/does-not-exist', requestId: 'nf-1' });
  t.regex(res.body.timestamp, ISO_MS);
});

test('known path, other method: 405 METHOD_NOT_ALLOWED with Allow', async (t) => {
  const res = await app.request('DELETE', '/health/live');
  t.is(res.status, 405);
  t.is(res.headers.get('allow'), 'HEAD, GET');
  t.like(res.body, { status: 405, code: 'METHOD_NOT_ALLOWED', path: '/health/live' });
});

test("a path of a route without parameters is that route's alone: /products/popular is no product id", async (t) => {
  const seller = await createMember(app, 'SELLER');
  const auth = { Authorization: `Bearer ${seller.token}` };
  for (const [method, path, headers] of [
    ['POST', '/api/v1/products/popular', {}],
    ['PATCH', '/api/v1/products/popular', auth],
    ['PATCH', '/api/v1/products/popular', {}],
    ['DELETE', '/api/v1/products/cursor', auth],
    ['PUT', '/api/v1/products/cursor', {}],
  ] as const) {
    const res = await app.request(method, path, { headers, body: { name: 'x' } });
    t.is(res.status, 405, `${method} ${path}`);
    t.is(res.headers.get('allow'), 'HEAD, GET', `${method} ${path}`);
    t.like(res.body, { status: 405, code: 'METHOD_NOT_ALLOWED', path }, `${method} ${path}`);
  }
  // Any other segment is still a product id, refused when it is not one.
  const notAnId = await app.request('PATCH', '/api/v1/products/populars', {
    headers: auth,
    body: { name: 'x' },
  });
  t.is(notAnId.status, 400);
  t.like(notAnId.body, { code: 'VALIDATION_ERROR', errors: [{ field: 'params.productId' }] });
  t.is((await app.request('POST', '/api/v1/products/7')).headers.get('allow'), 'HEAD, GET, PATCH, DELETE');
});

test('plain OPTIONS (no preflight headers) is an ordinary request: 405 with Allow', async (t) => {
  const res = await app.request('OPTIONS', '/health/ready');
  t.is(res.status, 405);
  t.is(res.headers.get('allow'), 'HEAD, GET');
  t.like(res.body, { status: 405, code: 'METHOD_NOT_ALLOWED' });
});

test('unexpected errors become a generic 500 without internals, logged with the request id', async (t) => {
  const logs = new LogCollector();
  const logger = createLogger({ level: 'info', format: 'line', out: logs });
  const koa = new Koa();
  koa.silent = true;
  koa.use(requestIdAndAccessLog(logger));
  koa.use(errorHandler(logger));
  koa.use(() => {
    throw new Error('select * from secret_table failed');
  });
  const server = http.createServer(koa.callback()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { port } = server.address() as { port: number };
    const res = await request(`http://127.0.0.1:${port}`, 'GET', '/boom', {
      headers: { 'X-Request-Id': 'boom-1' },
    });
    t.is(res.status, 500);
    t.like(res.body, {
      status: 500,
      code: 'INTERNAL_ERROR',
      message: 'An unexpected error occurred',
      requestId: 'boom-1',
    });
    t.false(res.text.includes('secret_table'));
    t.false(res.text.includes('stack'));
    t.true(logs.lines.some((line) => line.includes('[ERROR] [boom-1] [ErrorHandler]')));
    t.true(logs.text.includes('secret_table'), 'the cause is logged for operators');
  } finally {
    server.close();
  }
});

test('keys named like Object.prototype members are unknown fields (400), never a 500', async (t) => {
  for (const key of ['toString', 'constructor', 'hasOwnProperty', 'valueOf']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      raw: `{"email":"a@b.test","password":"whatever1","${key}":1}`,
      headers: { 'Content-Type': 'application/json' },
    });
    t.is(res.status, 400, key);
    t.like(res.body, {
      status: 400,
      code: 'VALIDATION_ERROR',
      errors: [{ field: key, message: 'unknown field' }],
    });
  }
  // The JSON parser itself refuses a __proto__ key.
  const proto = await app.request('POST', '/api/v1/auth/login', {
    raw: '{"email":"a@b.test","password":"whatever1","__proto__":{"x":1}}',
    headers: { 'Content-Type': 'application/json' },
  });
  t.is(proto.status, 400);
  t.like(proto.body, {
    status: 400,
    code: 'VALIDATION_ERROR',
    message: 'Request body must not contain a "__proto__" key',
    errors: [{ field: 'body', message: 'must not contain a "__proto__" key' }],
  });
  const query = await app.request('GET', '/api/v1/products?constructor=1');
  t.is(query.status, 400);
  t.like(query.body, {
    code: 'VALIDATION_ERROR',
    errors: [{ field: 'query.constructor', message: 'unknown field' }],
  });
});

test('an API route that declares no query parameters refuses any (400), as one that declares some; other paths ignore them', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id);
  for (const path of [
    `/api/v1/products/${productId}?x=1`,
    '/api/v1/categories?x=1',
    '/api/v1/products/popular?x=1',
  ]) {
    const res = await app.request('GET', path);
    assertError(t, res, 400, 'VALIDATION_ERROR', path.slice(0, path.indexOf('?')));
    t.deepEqual(res.body.errors, [{ field: 'query.x', message: 'unknown field' }], path);
  }
  const members = await app.request('GET', '/api/v1/members/me?verbose=true', { token: seller.token });
  t.deepEqual(members.body.errors, [{ field: 'query.verbose', message: 'unknown field' }]);
  // No query, or an empty one, is none.
  t.is((await app.request('GET', `/api/v1/products/${productId}?`)).status, 200);
  t.is((await app.request('GET', '/api/v1/categories')).status, 200);
  // Outside the API a query string is ignored: a probe's own parameters, a cache-busting `?v=` (images too).
  t.is((await app.request('GET', '/health/live?probe=lb-1')).status, 200);
  t.is((await app.request('GET', '/health/ready?probe=lb-1')).status, 200);
  t.is((await app.request('GET', '/docs?v=2')).status, 200);
});

test('a body that is not a JSON object is a 400 naming the body', async (t) => {
  for (const raw of ['[]', '[{"email":"a"}]', 'null', '1', '"text"', 'true']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      raw,
      headers: { 'Content-Type': 'application/json' },
    });
    t.is(res.status, 400);
    t.like(res.body, {
      code: 'VALIDATION_ERROR',
      message: 'Request body must be a JSON object',
      errors: [{ field: 'body', message: 'must be a JSON object' }],
    });
  }
  // Text that does not parse is another 400.
  for (const raw of ['{"email":', '{email: 1}', 'nul']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      raw,
      headers: { 'Content-Type': 'application/json' },
    });
    t.like(
      res.body,
      { status: 400, code: 'VALIDATION_ERROR', message: 'Request body is not valid JSON' },
      raw,
    );
  }
});

test('a Content-Encoding that does not decode (gzip, deflate, brotli) is a 400, not a 500', async (t) => {
  for (const encoding of ['gzip', 'deflate', 'br']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      raw: 'garbage',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding },
    });
    t.is(res.status, 400, encoding);
    t.like(
      res.body,
      { status: 400, code: 'VALIDATION_ERROR', message: 'Request body could not be decoded' },
      encoding,
    );
  }
});

/** A signup body as bytes, with `name` and `password` spliced in as raw bytes (not JSON-escaped). */
function signupBytes(email: string, name: Buffer, password: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`{"email":"${email}","name":"`),
    name,
    Buffer.from('","password":"'),
    password,
    Buffer.from('","phone":"010-9999-0000","role":"BUYER"}'),
  ]);
}

test('a body that is not UTF-8 is a 400 and writes nothing: its bytes are never read as U+FFFD', async (t) => {
  const email = `bytes-${Date.now()}@example.test`;
  const bad = signupBytes(email, Buffer.from([0x61, 0xff, 0xfe, 0x62]), Buffer.from('Secret-pass-1'));
  const sent: Array<[string, Buffer, Record<string, string>]> = [
    ['plain', bad, {}],
    ['gzip', zlib.gzipSync(bad), { 'Content-Encoding': 'gzip' }],
    ['deflate', zlib.deflateSync(bad), { 'Content-Encoding': 'deflate' }],
    ['br', zlib.brotliCompressSync(bad), { 'Content-Encoding': 'br' }],
    // a truncated sequence (the first two bytes of a three-byte character) is as invalid as a stray byte
    ['truncated', signupBytes(email, Buffer.from([0xe2, 0x82]), Buffer.from('Secret-pass-1')), {}],
  ];
  for (const [what, raw, headers] of sent) {
    const res = await app.request('POST', '/api/v1/auth/signup', {
      raw,
      headers: { 'Content-Type': 'application/json', ...headers },
    });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
    t.is(res.body.message, 'Request body is not valid UTF-8', what);
  }
  t.is(await app.db('members').where('email', email).first(), undefined);
});

test('two passwords of different invalid bytes are not one password: neither is taken', async (t) => {
  const email = `pw-bytes-${Date.now()}@example.test`;
  const password = (bytes: number[]) =>
    Buffer.concat([Buffer.from('Pass'), Buffer.from(bytes), Buffer.from('word-1')]);
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    raw: signupBytes(email, Buffer.from('Bytes'), password([0xff, 0xff, 0xff, 0xff])),
    headers: { 'Content-Type': 'application/json' },
  });
  assertError(t, signup, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
  const login = await app.request('POST', '/api/v1/auth/login', {
    raw: Buffer.concat([
      Buffer.from(`{"email":"${email}","password":"`),
      password([0xfe, 0xfe, 0x80, 0x80]),
      Buffer.from('"}'),
    ]),
    headers: { 'Content-Type': 'application/json' },
  });
  assertError(t, login, 400, 'VALIDATION_ERROR', '/api/v1/auth/login');
});

test('valid UTF-8 is read whole, U+FFFD sent as such included, in one chunk or split inside a character', async (t) => {
  const name = 'Zoë \uFFFD é';
  const email = `utf8-${Date.now()}@example.test`;
  const body = signupBytes(email, Buffer.from(name), Buffer.from('Secret-pass-1'));
  // The body arrives in two packets, the first ending inside U+FFFD (EF BF BD).
  const cut = body.indexOf(Buffer.from([0xef, 0xbf, 0xbd])) + 1;
  const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(
      `${app.url}/api/v1/auth/signup`,
      { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.write(body.subarray(0, cut));
    setTimeout(() => req.end(body.subarray(cut)), 50);
  });
  t.is(res.status, 201, res.text);
  t.is(JSON.parse(res.text).name, name);
  t.like(await app.db('members').where('email', email).first('name'), { name });
});

test('a JSON body in a charset other than UTF-8 is 415, before it is read', async (t) => {
  for (const charset of ['utf-16', 'iso-8859-1']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      raw: '{"email":"a@example.test","password":"x"}',
      headers: { 'Content-Type': `application/json; charset=${charset}` },
    });
    assertError(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE', '/api/v1/auth/login');
    t.is(res.body.message, `Request bodies are read as UTF-8, not ${charset}`, charset);
  }
  for (const charset of ['utf-8', 'UTF-8', 'utf8']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      raw: '{"email":"nobody@example.test","password":"Wrong-pass-1"}',
      headers: { 'Content-Type': `application/json; charset=${charset}` },
    });
    t.is(res.status, 401, charset);
  }
});

test('a client that stops sending its body is a 400 in the access log, not an ERROR and a 503', async (t) => {
  const requestId = `abort-${Date.now()}`;
  const url = new URL(app.url);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Content-Length: 100\r\nX-Request-Id: ${requestId}\r\n\r\n{"email":`,
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  const ours = () => app.logs.lines.filter((line) => line.includes(requestId));
  await until(
    () => ours().some((line) => line.includes('POST /api/v1/auth/login')),
    5000,
    () => ours().join('\n'),
  );
  t.true(
    ours().some((line) => line.includes('POST /api/v1/auth/login 400')),
    ours().join('\n'),
  );
  t.false(
    ours().some((line) => line.includes('[ERROR]')),
    ours().join('\n'),
  );
});

test('repeated or malformed integer query parameters are 400', async (t) => {
  for (const query of [
    'page=1&page=2',
    'size=1&size=2',
    'page=1e3',
    'page=-1',
    'size=0',
    'size=101',
    'page=99999999999',
  ]) {
    const res = await app.request('GET', `/api/v1/products?${query}`);
    t.is(res.status, 400, query);
    t.is(res.body.code, 'VALIDATION_ERROR', query);
    t.true(res.body.errors.length > 0, query);
  }
  for (const path of [
    '/api/v1/products/1e3',
    '/api/v1/products/-1',
    '/api/v1/products/99999999999',
    '/api/v1/products/abc',
  ]) {
    const res = await app.request('GET', path);
    t.is(res.status, 400, path);
    t.like(res.body, { code: 'VALIDATION_ERROR', errors: [{ field: 'params.productId' }] });
  }
});

test('/health/ready answers 503 DOWN when the database is unreachable', async (t) => {
  // MariaDB behind a proxy that refuses every connection (readiness has a connection of its own); SQLite's one
  // connection closed.
  const database = DB_KIND === 'mysql' ? await createTestDatabase() : undefined;
  const server = database && new URL(database.env.DATABASE_URL);
  const proxy = server
    ? await startTcpProxy({ host: server.hostname, port: Number(server.port || 3306) })
    : null;
  const other = await startTestApp(
    proxy && database ? { database, env: { DATABASE_URL: proxy.urlFor(database.env.DATABASE_URL) } } : {},
  );
  try {
    if (proxy) proxy.refuse();
    else await other.db.destroy();
    const res = await other.request('GET', '/health/ready');
    t.is(res.status, 503);
    t.is(res.headers.get('retry-after'), '5');
    t.deepEqual(res.body, { status: 'DOWN', checks: { database: 'DOWN', migrations: 'UNKNOWN' } });
  } finally {
    await other.close().catch(() => undefined);
    await proxy?.close();
    await database?.drop();
  }
});
