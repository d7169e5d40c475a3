// Signals to the server process once it runs: the first SIGTERM drains (a request still arriving keeps it
// waiting), a second one while it drains exits at once with 1, as Node's default would (Ctrl-C twice). During
// the start a second signal is ignored instead (test/db/concurrent-starts.test.ts).
import net from 'node:net';
import test from 'ava';
import { createTestDatabase } from '../helpers/harness';
import { startServerProcess } from '../helpers/server-process';

test('a second SIGTERM while the first drains exits at once with 1', async (t) => {
  const database = await createTestDatabase();
  try {
    const server = await startServerProcess({ ...database.env, SHUTDOWN_TIMEOUT_MS: '20000' });
    // A request still arriving (its body not complete): the drain waits for it.
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"em',
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    server.child.kill('SIGTERM');
    const until = Date.now() + 5000;
    while (!server.output().includes('SIGTERM received, shutting down') && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.regex(server.output(), /SIGTERM received, shutting down/);
    const again = Date.now();
    server.child.kill('SIGTERM');
    t.is(await server.exited, 1, server.output());
    t.true(Date.now() - again < 2000, `exited after ${Date.now() - again} ms`);
    t.regex(server.output(), /SIGTERM received again: exiting without finishing the shutdown/);
    socket.destroy();
  } finally {
    await database.drop();
  }
});
