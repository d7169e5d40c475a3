// The HTTP server's limits from lib/config.ts: a slow client that never finishes its headers is answered
// 408 and disconnected after HTTP_HEADERS_TIMEOUT_MS; connections beyond HTTP_MAX_CONNECTIONS are closed
// at once; keep-alive sockets idle longer than HTTP_KEEP_ALIVE_TIMEOUT_MS are closed. Bad values are
// named at start.
import net from 'node:net';
import test from 'ava';
import { ConfigError, loadConfig } from '../../lib/config';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({
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
