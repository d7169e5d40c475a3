// Graceful shutdown of the real process: SIGTERM/SIGINT let an in-flight request finish, then exit 0.
import http from 'node:http';
import test from 'ava';
import { createTestDatabase } from '../helpers/harness';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';

/** The real service process on its own database (port 0: the OS picks a free port), started and listening. */
async function startServer(): Promise<{ server: ServerProcess; cleanup(): Promise<void> }> {
  const database = await createTestDatabase();
  try {
    const server = await startServerProcess(database.env);
    return {
      server,
      async cleanup() {
        if (server.child.exitCode === null) server.child.kill('SIGKILL');
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop();
    throw err;
  }
}

test('SIGTERM: stop accepting, finish the in-flight request, exit 0', async (t) => {
  const { server, cleanup } = await startServer();
  try {
    t.true(server.output().includes('Listening on'), server.output());
    // A request whose body is still arriving when SIGTERM comes in.
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: server.port,
          method: 'POST',
          path: '/health/live',
          headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
        },
        (response) => {
          let body = '';
          response.on('data', (c) => (body += c));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write('{"half":');
      setTimeout(() => {
        server.child.kill('SIGTERM');
        setTimeout(() => req.end('"done"}'), 300);
      }, 200);
    });
    t.is(res.status, 405, 'the in-flight request got its real answer');
    t.is(JSON.parse(res.body).code, 'METHOD_NOT_ALLOWED');
    t.is(await server.exited, 0);
    t.regex(server.output(), /SIGTERM received, shutting down/);
    t.regex(server.output(), /Shutdown complete/);
  } finally {
    await cleanup();
  }
});

test('SIGINT shuts down the same way: exit 0 after a clean stop', async (t) => {
  const { server, cleanup } = await startServer();
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/health/ready`);
    t.is(res.status, 200);
    server.child.kill('SIGINT');
    t.is(await server.exited, 0);
    t.regex(server.output(), /SIGINT received, shutting down/);
    t.regex(server.output(), /Shutdown complete/);
  } finally {
    await cleanup();
  }
});
