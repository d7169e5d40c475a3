// The graceful server's drain, driven directly: responses written after the drain began close their
// keep-alive connection (`Connection: close`), responses before it keep it open, and the drain ends once
// the in-flight request is answered.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { createGracefulServer } from '../../lib/graceful-server';

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
