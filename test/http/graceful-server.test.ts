// The graceful server's drain, driven directly: responses written after the drain began close their
// keep-alive connection (`Connection: close`), responses before it keep it open, and the drain ends once
// the in-flight request is answered.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import test from 'ava';
import { createGracefulServer, IDLE_GRACE_MS } from '../../lib/graceful-server';

const limits = {
  requestTimeoutMs: 5_000,
  headersTimeoutMs: 2_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 10,
};

test('a response written once the drain began says Connection: close; one before it keeps the socket', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const graceful = createGracefulServer((req, res) => {
    const answer = () => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(req.url);
    };
    if (req.url === '/slow') void held.then(answer);
    else answer();
  }, limits);
  await new Promise<void>((resolve) => graceful.server.listen(0, '127.0.0.1', resolve));
  const { port } = graceful.server.address() as AddressInfo;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string) =>
    new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
        })
        .on('error', reject);
    });
  try {
    t.like(await get('/fast'), { status: 200, connection: 'keep-alive', body: '/fast' });
    const slow = get('/slow');
    while (graceful.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const drained = graceful.drain(5_000);
    release();
    t.like(await slow, { status: 200, connection: 'close', body: '/slow' });
    await drained;
    t.is(graceful.inFlight(), 0);
  } finally {
    agent.destroy();
    graceful.server.close();
  }
});

test('a request whose headers are still arriving when the drain begins is answered, not cut', async (t) => {
  const graceful = createGracefulServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(`answered ${req.url}`);
  }, limits);
  await new Promise<void>((resolve) => graceful.server.listen(0, '127.0.0.1', resolve));
  const { port } = graceful.server.address() as AddressInfo;
  const socket = net.connect(port, '127.0.0.1');
  try {
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write('GET /partial HTTP/1.1\r\nHost: x\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const drained = graceful.drain(5_000);
    // Longer than the idle grace: a socket idle that long is closed, this one is mid-request.
    await new Promise((resolve) => setTimeout(resolve, IDLE_GRACE_MS + 400));
    t.false(socket.destroyed, 'still open');
    socket.write('X-Last: 1\r\n\r\n');
    await closed;
    await drained;
    t.regex(received, /^HTTP\/1\.1 200 OK\r\n/);
    t.regex(received, /Connection: close\r\n/i);
    t.true(received.includes('answered /partial'), received);
  } finally {
    socket.destroy();
    graceful.server.close();
  }
});

test('an idle keep-alive socket is still closed by the drain once idle for the grace period', async (t) => {
  const graceful = createGracefulServer((_req, res) => res.end('ok'), limits);
  await new Promise<void>((resolve) => graceful.server.listen(0, '127.0.0.1', resolve));
  const { port } = graceful.server.address() as AddressInfo;
  const socket = net.connect(port, '127.0.0.1');
  try {
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!received.endsWith('ok')) await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const started = Date.now();
    await graceful.drain(5_000);
    await closed;
    const took = Date.now() - started;
    t.true(took >= IDLE_GRACE_MS - 50 && took < 3_000, `closed after ${took} ms`);
  } finally {
    socket.destroy();
    graceful.server.close();
  }
});
