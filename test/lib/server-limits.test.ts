// The HTTP server's limits from lib/config.ts: a slow client that never finishes its headers is answered
// 408 (in the error body, as every request the HTTP parser refuses) and disconnected after
// HTTP_HEADERS_TIMEOUT_MS; connections beyond HTTP_MAX_CONNECTIONS are closed at once; keep-alive sockets
// idle longer than HTTP_KEEP_ALIVE_TIMEOUT_MS are closed. Bad values are named at start.
import net from 'node:net';
import test from 'ava';
import { ConfigError, loadConfig } from '../../lib/config';
import { MAX_UPLOAD_BODY_BYTES } from '../../lib/http/image-upload-parser';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { until } from '../helpers/until';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({
    logLevel: 'info',
    env: {
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '2000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '300',
      HTTP_MAX_CONNECTIONS: '3',
    },
  });
});
test.after.always(async () => {
  await app?.close();
});

function connect(): Promise<net.Socket> {
  const port = Number(new URL(app.url).port);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the socket, and how long that took. */
function untilClosed(socket: net.Socket): Promise<{ text: string; ms: number }> {
  const start = Date.now();
  let text = '';
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => undefined);
  return new Promise((resolve) => socket.once('close', () => resolve({ text, ms: Date.now() - start })));
}

test.serial('headers never finished: 408 and closed after HTTP_HEADERS_TIMEOUT_MS', async (t) => {
  const socket = await connect();
  const closed = untilClosed(socket);
  socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n'); // the blank line never comes
  const { text, ms } = await closed;
  t.regex(text, /^HTTP\/1\.1 408 /);
  t.true(ms >= 900 && ms < 4_000, `closed after ${ms} ms`);
  const answer = parseAnswer(text);
  t.like(answer.body, { status: 408, code: 'REQUEST_TIMEOUT', path: '' });
  t.is(answer.headers['x-request-id'], answer.body.requestId);
});

/** A connected socket that keeps its side open when the server ends its own (half-open), and what it received. */
async function halfOpen(): Promise<{ socket: net.Socket; text: () => string }> {
  const port = Number(new URL(app.url).port);
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => undefined);
  let text = '';
  socket.on('data', (chunk) => (text += chunk));
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, text: () => text };
}

test.serial('a client that keeps its side open after the 408 does not keep the connection', async (t) => {
  const { socket, text } = await halfOpen();
  socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n'); // the blank line never comes
  await new Promise((resolve) => socket.once('end', resolve));
  t.regex(text(), /^HTTP\/1\.1 408 /);
  // This side stays open (and keeps sending): the server has closed the connection all the same.
  socket.write('X-Still: here\r\n');
  const count = () => new Promise<number>((resolve) => app.server.getConnections((_err, n) => resolve(n)));
  const until = Date.now() + 1500;
  while ((await count()) > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(await count(), 0);
  socket.destroy();
});

test.serial(
  'a body still trickling in after the 408 is not run: the request it belonged to never happens',
  async (t) => {
    const { socket, text } = await halfOpen();
    const body = JSON.stringify({
      email: `slow-${Date.now()}@example.test`,
      password: 'Password-123',
      name: 'S',
      phone: '0101234567',
      role: 'BUYER',
    });
    socket.write(
      `POST /api/v1/auth/signup HTTP/1.1\r\nHost: x\r\nX-Request-Id: slow-body-${process.pid}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    socket.write(body.slice(0, 10));
    await new Promise((resolve) => socket.once('end', resolve)); // the 408, after HTTP_REQUEST_TIMEOUT_MS
    t.regex(text(), /^HTTP\/1\.1 408 /);
    // The request line had arrived: the body names its path.
    const answer = parseAnswer(text());
    t.like(answer.body, { status: 408, code: 'REQUEST_TIMEOUT', path: '/api/v1/auth/signup' });
    // The app had begun the request: the 408 keeps its id, and so does the access log's line for it.
    t.is(answer.headers['x-request-id'], `slow-body-${process.pid}`);
    t.is(answer.body.requestId, `slow-body-${process.pid}`);
    const accessLine = () =>
      app.logs.lines.find((line) => line.includes(`[slow-body-${process.pid}] [HttpLogger]`)) ?? '';
    await until(
      () => accessLine() !== '',
      2000,
      () => app.logs.text,
    );
    t.regex(accessLine(), /POST \/api\/v1\/auth\/signup 408 /, 'the status the client got');
    socket.write(body.slice(10)); // the rest of the body, too late
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.is((await app.db('members').where('email', JSON.parse(body).email)).length, 0);
    t.false(text().includes('201 Created'));
    socket.destroy();
  },
);

test.serial(
  'an HTTP/1.1 request without Host is 400 in the error body; HTTP/1.0 needs none; an unknown Expect is ignored',
  async (t) => {
    const send = async (request: string) => {
      const socket = await connect();
      const closed = untilClosed(socket);
      // Not half-closed after the request: Node aborts a request whose client ended its side before the answer.
      socket.write(request);
      return (await closed).text;
    };
    // Twice: the second would be the memo's to replay (a GET of a cached document), and it is refused too.
    for (let i = 0; i < 2; i++) {
      const text = await send('GET /api/v1/categories HTTP/1.1\r\nConnection: close\r\n\r\n');
      const answer = parseAnswer(text);
      t.is(answer.status, 400, text);
      t.like(answer.body, { status: 400, code: 'VALIDATION_ERROR', path: '/api/v1/categories' });
      t.deepEqual(answer.body.errors, [{ field: 'Host', message: 'is required' }]);
      t.is(answer.headers['x-request-id'], answer.body.requestId);
      t.is(answer.headers['x-content-type-options'], 'nosniff');
    }
    t.regex(await send('GET /health/live HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 /);
    const expecting = await send(
      'GET /api/v1/categories HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n',
    );
    t.regex(expecting, /^HTTP\/1\.1 200 /);
    t.regex(expecting, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
  },
);

test.serial(
  'Expect: 100-continue: "100 Continue" goes out when the body is read; a request refused before is answered without it',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id);
    const stranger = await createMember(app, 'SELLER');
    const upload = (headers: string) =>
      `POST /api/v1/products/${productId}/images HTTP/1.1\r\nHost: x\r\n` +
      `Content-Type: multipart/form-data; boundary=b\r\nExpect: 100-continue\r\n${headers}\r\n`;
    // Refused before the body: no token (401), another seller's product (403), an unknown product (404), a declared
    // length over the upload limit (413), not a form (415). The body is never sent, and the server closes the
    // connection after its answer (the body could still come).
    for (const [request, status, code] of [
      [upload('Content-Length: 5000000\r\n'), 401, 'UNAUTHENTICATED'],
      [upload(`Authorization: Bearer ${stranger.token}\r\nContent-Length: 5000000\r\n`), 403, 'FORBIDDEN'],
      [
        upload(`Authorization: Bearer ${seller.token}\r\nContent-Length: 5000000\r\n`).replace(
          `/products/${productId}/`,
          '/products/999999999/',
        ),
        404,
        'NOT_FOUND',
      ],
      [
        upload(`Authorization: Bearer ${seller.token}\r\nContent-Length: 5000000\r\n`).replace(
          'multipart/form-data; boundary=b',
          'text/plain',
        ),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        upload(`Authorization: Bearer ${seller.token}\r\nContent-Length: ${MAX_UPLOAD_BODY_BYTES + 1}\r\n`),
        413,
        'PAYLOAD_TOO_LARGE',
      ],
    ] as const) {
      const socket = await connect();
      const closed = untilClosed(socket);
      socket.write(request);
      const { text } = await closed;
      t.notRegex(text, /100 Continue/i, text);
      const answer = parseAnswer(text);
      t.is(answer.status, status, text);
      t.like(answer.body, { status, code });
    }

    // A client that sends its body without waiting (RFC 9110 allows it) gets the 100 before the refusal, so the
    // connection is not closed under it (a reset could lose the answer): it stays open for the next request.
    {
      const socket = await connect();
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      const closed = new Promise((resolve) => socket.once('close', resolve));
      const form = '--b\r\n'.padEnd(2000, 'x');
      socket.write(upload(`Content-Length: ${form.length}\r\n`) + form);
      await until(
        () => /\r\n\r\n\{.*\}$/s.test(text),
        5_000,
        () => JSON.stringify(text),
      );
      t.regex(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 401 /, text);
      t.like(parseAnswer(text.slice('HTTP/1.1 100 Continue\r\n\r\n'.length)).body, {
        status: 401,
        code: 'UNAUTHENTICATED',
      });
      text = '';
      socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await closed;
      t.regex(text, /^HTTP\/1\.1 200 /, text);
    }

    // Read: the 100 comes first, and only then does the client send its body, which the answer reflects.
    const body = JSON.stringify({ email: seller.email, password: seller.password });
    const socket = await connect();
    let text = '';
    socket.setEncoding('utf8');
    const continued = new Promise<void>((resolve) =>
      socket.on('data', (chunk: string) => {
        text += chunk;
        if (/^HTTP\/1\.1 100 Continue\r\n\r\n/.test(text)) resolve();
      }),
    );
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(
      `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
    );
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      continued.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 5_000))),
    ]);
    clearTimeout(timer);
    t.true(waited, `no "100 Continue" within 5 s: ${JSON.stringify(text)}`);
    t.is(text, 'HTTP/1.1 100 Continue\r\n\r\n', 'nothing but the 100 before the body is sent');
    socket.write(body);
    await closed;
    const answer = parseAnswer(text.slice('HTTP/1.1 100 Continue\r\n\r\n'.length));
    t.is(answer.status, 200, text);
    t.is(typeof answer.body.accessToken, 'string');
  },
);

/** Status, headers (lower-cased names) and JSON body of a raw HTTP/1.1 answer. */
function parseAnswer(text: string) {
  const [head, json] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(json) };
}

test('requests the HTTP parser refuses are answered in the error body with an X-Request-Id, then closed', async (t) => {
  const cases = [
    {
      request: 'GET /health/live HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      status: 400,
      code: 'VALIDATION_ERROR',
    },
    {
      request: 'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      status: 400,
      code: 'VALIDATION_ERROR',
    },
    {
      request: `GET /api/v1/products?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      status: 431,
      code: 'REQUEST_HEADERS_TOO_LARGE',
      path: '/api/v1/products',
    },
  ];
  for (const { request, status, code, path } of cases) {
    const socket = await connect();
    const closed = untilClosed(socket);
    socket.write(request);
    const answer = parseAnswer((await closed).text);
    t.is(answer.status, status, code);
    t.like(answer.body, { status, code });
    if (path) t.is(answer.body.path, path);
    t.regex(answer.headers['x-request-id'], /^[0-9a-f-]{36}$/);
    t.is(answer.headers['x-request-id'], answer.body.requestId);
    t.is(answer.headers['content-type'], 'application/json; charset=utf-8');
    t.is(answer.headers['x-content-type-options'], 'nosniff');
    t.is(answer.headers.connection, 'close');
    t.regex(answer.body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
});

test.serial('an idle keep-alive socket is closed after HTTP_KEEP_ALIVE_TIMEOUT_MS', async (t) => {
  const socket = await connect();
  const closed = untilClosed(socket);
  socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
  const { text, ms } = await closed;
  t.regex(text, /^HTTP\/1\.1 200 OK/);
  t.regex(text, /Connection: keep-alive/i);
  t.true(ms >= 250 && ms < 2_000, `closed after ${ms} ms`);
});

test.serial(
  'connections beyond HTTP_MAX_CONNECTIONS are closed at once; the others are served',
  async (t) => {
    const held = await Promise.all([connect(), connect(), connect()]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const extra = await connect();
    const { text, ms } = await untilClosed(extra);
    t.is(text, '');
    t.true(ms < 1_000);
    const served = untilClosed(held[0]);
    held[0].write('GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    t.regex((await served).text, /^HTTP\/1\.1 200 OK/);
    for (const socket of held) socket.destroy();
  },
);

test('the limits are validated at start and named when wrong', (t) => {
  const base = { NODE_ENV: 'test' };
  t.deepEqual(loadConfig(base).http, {
    requestTimeoutMs: 60_000,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 5_000,
    maxConnections: 1_000,
    requestsPerTurn: 0, // SQLite: off (with MySQL 4, tested in config.test.ts)
  });
  t.deepEqual(loadConfig(base).dbTimeouts, { connectMs: 5_000, acquireMs: 5_000, statementMs: 5_000 });
  for (const [variable, value] of [
    ['HTTP_MAX_CONNECTIONS', '0'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', 'soon'],
    ['DB_STATEMENT_TIMEOUT_MS', '10'],
    ['DB_CONNECT_TIMEOUT_MS', '-1'],
    ['DB_ACQUIRE_TIMEOUT_MS', '1.5'],
  ]) {
    const err = t.throws(() => loadConfig({ ...base, [variable]: value }), { instanceOf: ConfigError });
    t.is(err!.variable, variable);
  }
  const err = t.throws(
    () => loadConfig({ ...base, HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }),
    { instanceOf: ConfigError },
  );
  t.is(err!.variable, 'HTTP_HEADERS_TIMEOUT_MS');
});
