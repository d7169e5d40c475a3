// Edges of the graceful drain (lib/graceful-server.ts) that a mutation hunt found unpinned: a request that never
// ends does not hold the shutdown past its deadline, a keep-alive socket answered a moment ago keeps the idle
// grace, and one whose unread body has arrived is idle.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import test from 'ava';
import { createGracefulServer } from '../../lib/graceful-server';
import { until } from '../helpers/until';

test('drain: a request that never ends is cut at the deadline, the drain resolves and new connections are refused', async (t) => {
  const graceful = createGracefulServer(
    (req, res) => {
      if (req.url === '/forever') return; // never answered
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
    },
    { requestTimeoutMs: 60_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, maxConnections: 10 },
  );
  await new Promise<void>((resolve) => graceful.server.listen(0, '127.0.0.1', resolve));
  const { port } = graceful.server.address() as AddressInfo;
  const hanging = new Promise<string>((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/forever' }, () => resolve('answered'))
      .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
  while (graceful.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 5));

  try {
    // Far beyond the 200 ms deadline: only a drain that never ends loses this race.
    const outcome = await Promise.race([
      graceful.drain(200).then(() => 'drained'),
      new Promise((resolve) => setTimeout(() => resolve('still draining'), 15_000).unref()),
    ]);
    t.is(outcome, 'drained');
    if (outcome !== 'drained') return;
    t.is(await hanging, 'ECONNRESET', 'the unanswered request lost its connection');
    const refusedConnection = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    t.is(refusedConnection, 'ECONNREFUSED');
  } finally {
    // so that the test ends also when the drain did not stop the listener or close the connection
    graceful.server.closeAllConnections();
    graceful.server.close();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// The drain's idle grace (lib/graceful-server.ts IDLE_GRACE_MS)

const drainLimits = {
  requestTimeoutMs: 60_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 30_000,
  maxConnections: 10,
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw keep-alive connection to `port`: what it received, and whether the server closed it. */
async function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const state = { received: '', closed: false };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (state.received += chunk));
  socket.on('error', () => undefined); // a reset shows as the close below
  socket.on('close', () => (state.closed = true));
  return { socket, state };
}

test('drain: a keep-alive socket answered a moment ago gets the grace period; the request its client sends as the drain begins is answered with Connection: close', async (t) => {
  const graceful = createGracefulServer((req, res) => {
    const body = `answered ${req.url}`;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }, drainLimits);
  await new Promise<void>((resolve) => graceful.server.listen(0, '127.0.0.1', resolve));
  const { port } = graceful.server.address() as AddressInfo;
  const { socket, state } = await rawConnection(port);
  try {
    await sleep(700); // the connection itself is older than the grace period; its last answer is not
    socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(
      () => state.received.includes('answered /first'),
      5_000,
      () => state.received,
    );
    const drained = graceful.drain(10_000);
    socket.write('GET /second HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(
      () => state.closed,
      15_000,
      () => `not closed: ${state.received}`,
    );
    await drained;
    const responses = state.received.split(/(?=HTTP\/1\.1 )/);
    t.is(responses.length, 2, state.received);
    t.regex(responses[0], /^HTTP\/1\.1 200 OK\r\n/);
    t.notRegex(responses[0], /\r\nConnection: close\r\n/i, 'answered before the drain: kept open');
    t.regex(responses[1], /^HTTP\/1\.1 200 OK\r\n/);
    t.regex(responses[1], /\r\nConnection: close\r\n/i);
    t.true(responses[1].endsWith('\r\n\r\nanswered /second'), responses[1]);
  } finally {
    socket.destroy();
    graceful.server.close();
  }
});

test('drain: a socket answered before its request body was all read is idle once the rest has arrived, and closed well before the deadline', async (t) => {
  let bodyEnded = false;
  const graceful = createGracefulServer((req, res) => {
    req.once('end', () => (bodyEnded = true));
    // answered at once, before the body is read (as a refusal on the headers alone is)
    res.writeHead(413, { 'Content-Type': 'text/plain' });
    res.end('early');
  }, drainLimits);
  await new Promise<void>((resolve) => graceful.server.listen(0, '127.0.0.1', resolve));
  const { port } = graceful.server.address() as AddressInfo;
  const { socket, state } = await rawConnection(port);
  try {
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 20000\r\n\r\n${'a'.repeat(1000)}`,
    );
    await until(
      () => state.received.includes('early'),
      5_000,
      () => state.received,
    );
    socket.write('a'.repeat(19_000)); // the rest, which Node reads and drops
    await until(
      () => bodyEnded,
      5_000,
      () => 'the body was not read to its end',
    );
    // A socket still counted busy would be held until the 30 s deadline; an idle one goes after the grace period.
    const outcome = await Promise.race([
      graceful.drain(30_000).then(() => 'drained'),
      sleep(15_000).then(() => 'held until the deadline'),
    ]);
    t.is(outcome, 'drained');
    await until(
      () => state.closed,
      5_000,
      () => 'the socket is still open',
    );
    t.regex(state.received, /^HTTP\/1\.1 413 /);
  } finally {
    socket.destroy();
    graceful.server.close();
  }
});
