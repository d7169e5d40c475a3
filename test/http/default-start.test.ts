// The default start (`npm start` with nothing configured but the database) is safe: it listens on loopback only
// and signs tokens with a random secret generated in DATA_DIR (mode 0600), kept across a restart so sessions
// survive. Runs the real server process twice.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { createTestDatabase, request, type TestDatabase } from '../helpers/harness';

interface Started {
  port: number;
  stop(): Promise<void>;
}

/** `node lib/server.ts` with only PATH, PORT=0 and the database: no NODE_ENV, HOST or JWT_SECRET. */
async function startDefault(database: TestDatabase): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/server.ts'], {
    env: { PATH: process.env.PATH, PORT: '0', ...database.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let match: RegExpExecArray | null = null;
  for (let i = 0; i < 600 && !(match = /Listening on ([\d.]+):(\d+)/.exec(output)); i++) {
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!match) {
    child.kill('SIGKILL');
    throw new Error(`the server did not start:\n${output}`);
  }
  if (match[1] !== '127.0.0.1') {
    child.kill('SIGKILL');
    throw new Error(`listening on ${match[1]}, not loopback`);
  }
  return {
    port: Number(match[2]),
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  await database?.drop();
});

test('default start: loopback only, a generated secret in DATA_DIR (0600), sessions survive a restart', async (t) => {
  const first = await startDefault(database);
  let token: string;
  try {
    const base = `http://127.0.0.1:${first.port}`;
    const external = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (external) t.false(await connects(external, first.port), `not reachable on ${external}`);
    t.true(await connects('127.0.0.1', first.port));

    const login = await request(base, 'POST', '/api/v1/auth/login', {
      body: { email: 'buyer@marketplace.test', password: 'Buyer123!' },
    });
    t.is(login.status, 200, login.text);
    token = login.body.accessToken;
    const file = path.join(database.dataDir, 'jwt-secret');
    t.is(fs.statSync(file).mode & 0o777, 0o600);
    const secret = fs.readFileSync(file, 'utf8').trim();
    t.true(secret.length >= 64);
    t.false(token.includes(secret));
  } finally {
    await first.stop();
  }

  const second = await startDefault(database);
  try {
    const me = await request(`http://127.0.0.1:${second.port}`, 'GET', '/api/v1/members/me', { token });
    t.is(me.status, 200, me.text);
    t.is(me.body.email, 'buyer@marketplace.test');
    t.is(me.body.role, 'BUYER');
  } finally {
    await second.stop();
  }
});
