// Requests admitted a few per event-loop turn (lib/http/turns.ts): a burst starts in arrival order, `perTurn` per
// turn, and the loop reads its sockets between turns (a real TCP round trip completes in the middle of a burst,
// where without turns it waits until the whole burst has run); a request that finds the turn free starts at once;
// a listener that throws in a turn strands no other request; the server's request listener starts Koa's requests
// that way.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { inTurns } from '../../lib/http/turns';
import { startTestApp } from '../helpers/harness';

/** Stand-ins for the request and response objects, which the scheduler only passes on. */
const request = (id: number) =>
  [{ url: `/${id}` } as http.IncomingMessage, {} as http.ServerResponse] as const;

/** A TCP echo server on loopback and a connected client; `roundTrip()` resolves when the echo is back. */
async function echo(t: { teardown: (fn: () => void) => void }) {
  const server = net.createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => client.once('connect', resolve));
  t.teardown(() => {
    client.destroy();
    server.close();
  });
  return {
    roundTrip: () =>
      new Promise<void>((resolve) => {
        client.once('data', () => resolve());
        client.write('ping');
      }),
  };
}

/** Starts `count` requests in one synchronous burst; `started` lists their ids in the order they ran. */
function burst(perTurn: number, count: number) {
  const started: number[] = [];
  const listener = inTurns((req) => void started.push(Number(req.url!.slice(1))), perTurn);
  for (let id = 0; id < count; id += 1) listener(...request(id));
  return started;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('a burst starts perTurn requests per turn, in the order they arrived', async (t) => {
  const started = burst(4, 10);
  t.deepEqual(started, [0, 1, 2, 3], 'the first turn: the room it had');
  await turn();
  t.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7]);
  await turn();
  t.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('between turns the loop reads its sockets: a round trip completes in the middle of a burst', async (t) => {
  const { roundTrip } = await echo(t);
  const echoed = roundTrip();
  const started = burst(4, 200);
  await echoed;
  t.true(started.length >= 4 && started.length < 200, `${started.length} of 200 had started`);
  t.deepEqual(
    started,
    started.map((_, index) => index),
    'in arrival order',
  );
  while (started.length < 200) await turn();
  t.is(started.length, 200, 'every request started');
});

test('without turns (0) a burst runs whole before the loop reads a socket', async (t) => {
  const { roundTrip } = await echo(t);
  const echoed = roundTrip();
  const started = burst(0, 200);
  await echoed;
  t.is(started.length, 200);
});

test('a request that finds the turn free starts at once, also after a burst has drained', async (t) => {
  const started: string[] = [];
  const listener = inTurns((req) => void started.push(req.url!), 2);
  listener(...request(1));
  t.deepEqual(started, ['/1'], 'at once');
  for (let id = 2; id <= 5; id += 1) listener(...request(id));
  t.deepEqual(started, ['/1', '/2']);
  await turn();
  await turn();
  t.deepEqual(started, ['/1', '/2', '/3', '/4', '/5']);
  await turn(); // a turn that finds nobody waiting
  listener(...request(6));
  t.deepEqual(started, ['/1', '/2', '/3', '/4', '/5', '/6'], 'at once again');
});

test('the server starts its Koa requests in turns (HTTP_REQUESTS_PER_TURN)', async (t) => {
  const app = await startTestApp({ env: { HTTP_REQUESTS_PER_TURN: '2' } });
  t.teardown(() => app.close());
  // Five requests handed to the server's request listener in one go, as five sockets read in one poll would be.
  const responses = Array.from({ length: 5 }, (_, index) => {
    const req = new http.IncomingMessage(new net.Socket());
    req.method = 'GET';
    req.url = `/api/v1/no-such-route-${index}`;
    req.headers = { 'x-request-id': `turn-${index}` };
    const res = new http.ServerResponse(req);
    app.bundle.handle(req, res);
    return res;
  });
  // Koa's first middleware sets X-Request-Id as the request starts.
  const startedIds = () => responses.map((res) => res.getHeader('x-request-id') ?? null);
  t.deepEqual(startedIds(), ['turn-0', 'turn-1', null, null, null]);
  await turn();
  t.deepEqual(startedIds(), ['turn-0', 'turn-1', 'turn-2', 'turn-3', null]);
  await turn();
  t.deepEqual(startedIds(), ['turn-0', 'turn-1', 'turn-2', 'turn-3', 'turn-4']);
});

const TURNS_MODULE = fileURLToPath(new URL('../../lib/http/turns.ts', import.meta.url));

test('a listener that throws in a turn strands no other request: the rest of its turn starts, then the error surfaces', async (t) => {
  // In a process of its own: the throw is an uncaught exception there, as from a plain server's 'request' event
  // (here caught by the script's handler, so that the process lives on to report what started).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turns-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'throwing-listener.ts');
  fs.writeFileSync(
    script,
    `import { inTurns } from ${JSON.stringify(TURNS_MODULE)};
const started: string[] = [];
const surfaced: Array<{ message: string; startedBefore: string[] }> = [];
process.on('uncaughtException', (err) => surfaced.push({ message: err.message, startedBefore: [...started] }));
const listener = inTurns((req) => {
  started.push(String(req.url));
  if (req.url === '/2') throw new Error('listener failed on /2');
}, 2);
for (let id = 0; id < 6; id += 1) listener({ url: '/' + id } as never, {} as never);
setTimeout(() => console.log(JSON.stringify({ started, surfaced })), 100);
`,
  );
  const output = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
  const { started, surfaced } = JSON.parse(output) as {
    started: string[];
    surfaced: Array<{ message: string; startedBefore: string[] }>;
  };
  // /2 and /3 share the second turn: /3 starts although /2 threw, and the turns go on.
  t.deepEqual(started, ['/0', '/1', '/2', '/3', '/4', '/5']);
  t.deepEqual(surfaced, [{ message: 'listener failed on /2', startedBefore: ['/0', '/1', '/2', '/3'] }]);
});
