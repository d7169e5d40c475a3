import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';

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
    t.deepEqual(res.body, { status: 'DOWN', checks: { database: 'UP', migrations: 'PENDING' } });
  } finally {
    await fresh.close();
  }
});
