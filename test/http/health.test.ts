import test from 'ava';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test('GET /health/live answers 200 UP', async (t) => {
  const res = await app.request('GET', '/health/live');
  t.is(res.status, 200);
  t.deepEqual(res.body, { status: 'UP' });
});

test('GET /health/ready answers 200 when the database is reachable and migrated', async (t) => {
  const res = await app.request('GET', '/health/ready');
  t.is(res.status, 200);
  t.deepEqual(res.body, { status: 'UP', checks: { database: 'UP', migrations: 'UP' } });
});

test('GET /health/ready answers 503 when migrations are pending', async (t) => {
  const fresh = await startTestApp({ env: { MIGRATE_ON_START: 'false' } });
  try {
    const res = await fresh.request('GET', '/health/ready');
    t.is(res.status, 503);
    t.is(res.headers.get('retry-after'), '5');
    t.deepEqual(res.body, { status: 'DOWN', checks: { database: 'UP', migrations: 'PENDING' } });
  } finally {
    await fresh.close();
  }
});

test('GET /health/ready answers 200 while every connection of the pool is busy: a full pool is not the database down', async (t) => {
  if (DB_KIND !== 'mysql')
    return t.pass('SLEEP() holds a MariaDB connection; SQLite has one connection anyway');
  const busy = await startTestApp({
    database: app.database,
    env: { DB_POOL_MAX: '2', DB_ACQUIRE_TIMEOUT_MS: '5000' },
  });
  try {
    // Started now (a knex query runs once it is awaited or then'd).
    const sleeping = [1, 2].map(() => busy.db.raw('SELECT SLEEP(3)').then(() => undefined));
    await new Promise((resolve) => setTimeout(resolve, 200)); // both hold their connection now
    const started = Date.now();
    const res = await busy.request('GET', '/health/ready');
    t.is(res.status, 200, res.text);
    t.deepEqual(res.body, { status: 'UP', checks: { database: 'UP', migrations: 'UP' } });
    t.true(Date.now() - started < 1000, `answered after ${Date.now() - started} ms`);
    await Promise.all(sleeping);
  } finally {
    await busy.close();
  }
});

test('health ignores the Authorization header: a garbled token or one of an unknown member is not checked', async (t) => {
  const unknownMember = app.bundle.services.tokens.signAccessToken({
    id: 2_000_000_000,
    role: 'BUYER',
    tokenVersion: 0,
  });
  for (const token of ['not-a-jwt', unknownMember]) {
    const live = await app.request('GET', '/health/live', { token });
    t.is(live.status, 200, live.text);
    t.deepEqual(live.body, { status: 'UP' });
    const ready = await app.request('GET', '/health/ready', { token });
    t.is(ready.status, 200, ready.text);
    t.deepEqual(ready.body, { status: 'UP', checks: { database: 'UP', migrations: 'UP' } });
  }
});
