// Readiness edges (lib/health) that a mutation hunt found unpinned: 503 PENDING while exactly one migration is
// pending, 200 UP once it is applied (no restart), and migrations that cannot be listed are not reported applied.
import test from 'ava';
import knexFactory from 'knex';
import { knexConfig } from '../../lib/db';
import { createTestDatabase, startTestApp, testConfig } from '../helpers/harness';

test('readiness: 503 PENDING while one migration is not applied, 200 UP once it is (no restart)', async (t) => {
  const database = await createTestDatabase();
  const migrator = knexFactory(knexConfig(testConfig(database.env).database));
  let app: Awaited<ReturnType<typeof startTestApp>> | undefined;
  try {
    await migrator.migrate.latest();
    await migrator.migrate.down(); // the newest migration only
    const [, pending] = (await migrator.migrate.list()) as [unknown[], unknown[]];
    t.is(pending.length, 1);
    app = await startTestApp({ database, env: { MIGRATE_ON_START: 'false' } });
    const before = await app.request('GET', '/health/ready');
    t.is(before.status, 503);
    t.is(before.headers.get('retry-after'), '5');
    t.deepEqual(before.body, { status: 'DOWN', checks: { database: 'UP', migrations: 'PENDING' } });

    await migrator.migrate.latest();
    const after = await app.request('GET', '/health/ready');
    t.is(after.status, 200);
    t.is(after.headers.get('retry-after'), null);
    t.deepEqual(after.body, { status: 'UP', checks: { database: 'UP', migrations: 'UP' } });
  } finally {
    await app?.shutdown();
    await migrator.destroy();
    await database.drop();
  }
});

test('readiness: migrations that cannot be listed (a broken migrations table) are not reported applied', async (t) => {
  const database = await createTestDatabase();
  const setup = knexFactory(knexConfig(testConfig(database.env).database));
  let app: Awaited<ReturnType<typeof startTestApp>> | undefined;
  try {
    // knex finds its table but cannot read the applied migrations' names from it
    await setup.schema.createTable('knex_migrations', (table) => table.integer('unrelated'));
    app = await startTestApp({ database, env: { MIGRATE_ON_START: 'false' } });
    const res = await app.request('GET', '/health/ready');
    t.is(res.status, 503);
    t.is(res.headers.get('retry-after'), '5');
    t.deepEqual(res.body, { status: 'DOWN', checks: { database: 'UP', migrations: 'PENDING' } });
  } finally {
    await app?.shutdown();
    await setup.destroy();
    await database.drop();
  }
});
