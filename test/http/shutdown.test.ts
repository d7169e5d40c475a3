// Graceful shutdown of the real process: SIGTERM lets an in-flight request finish, then exits 0.
import { spawn } from 'node:child_process';
import http from 'node:http';
import test from 'ava';
import { createTestDatabase } from '../helpers/harness';

test('SIGTERM: stop accepting, finish the in-flight request, exit 0', async (t) => {
  const database = await createTestDatabase();
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
  try {
    for (let i = 0; i < 200 && !output.includes('Listening on'); i++)
      await new Promise((r) => setTimeout(r, 100));
    t.true(output.includes('Listening on'), output);

    // A request whose body is still arriving when SIGTERM comes in.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/health/live',
          headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
        },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write('{"half":');
      setTimeout(() => {
        child.kill('SIGTERM');
        setTimeout(() => req.end('"done"}'), 300);
      }, 200);
    });
    const res = await response;
    t.is(res.status, 405, 'the in-flight request got its real answer');
    t.is(JSON.parse(res.body).code, 'METHOD_NOT_ALLOWED');
    t.is(await exited, 0);
    t.regex(output, /SIGTERM received, shutting down/);
    t.regex(output, /Shutdown complete/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await database.drop();
  }
});

test('SIGINT shuts down the same way: exit 0 after a clean stop', async (t) => {
  const database = await createTestDatabase();
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
  try {
    for (let i = 0; i < 200 && !output.includes('Listening on'); i++)
      await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
    t.is(res.status, 200);
    child.kill('SIGINT');
    t.is(await exited, 0);
    t.regex(output, /SIGINT received, shutting down/);
    t.regex(output, /Shutdown complete/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await database.drop();
  }
});
