// Graceful shutdown of the real process: SIGTERM/SIGINT let an in-flight request finish, then exit 0.
import { spawn } from 'node:child_process';
import http from 'node:http';
import test from 'ava';
import { createTestDatabase, type TestDatabase } from '../helpers/harness';

interface ServerProcess {
  port: number;
  output: () => string;
  exited: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
  cleanup(): Promise<void>;
}

/** `node lib/server.ts` on its own database and a free-ish port, started and listening. */
async function startServerProcess(database: TestDatabase): Promise<ServerProcess> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/server.ts'], {
    env: {
      ...process.env,
      ...database.env,
      NODE_ENV: 'test',
      PORT: String(port),
      HOST: '127.0.0.1',
      BCRYPT_COST: '4',
      SEED_ON_START: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 200 && !output.includes('Listening on'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    port,
    output: () => output,
    exited,
    signal: (name) => child.kill(name),
    async cleanup() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await database.drop();
    },
  };
}

test('SIGTERM: stop accepting, finish the in-flight request, exit 0', async (t) => {
  const server = await startServerProcess(await createTestDatabase());
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
        server.signal('SIGTERM');
        setTimeout(() => req.end('"done"}'), 300);
      }, 200);
    });
    t.is(res.status, 405, 'the in-flight request got its real answer');
    t.is(JSON.parse(res.body).code, 'METHOD_NOT_ALLOWED');
    t.is(await server.exited, 0);
    t.regex(server.output(), /SIGTERM received, shutting down/);
    t.regex(server.output(), /Shutdown complete/);
  } finally {
    await server.cleanup();
  }
});

test('SIGINT shuts down the same way: exit 0 after a clean stop', async (t) => {
  const server = await startServerProcess(await createTestDatabase());
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/health/ready`);
    t.is(res.status, 200);
    server.signal('SIGINT');
    t.is(await server.exited, 0);
    t.regex(server.output(), /SIGINT received, shutting down/);
    t.regex(server.output(), /Shutdown complete/);
  } finally {
    await server.cleanup();
  }
});
