// Instances started at the same moment on a fresh database (an orchestrator rolling out replicas, or the
// README's cluster commands run together) all migrate and seed on start: the ones that find knex's migration
// lock taken wait for it instead of failing, every migration runs once, and the demo seed writes its rows once.
// A lock nobody releases (a migrator that crashed) fails the start after the wait, saying how to clear it. Most
// tests give each instance its own pool, so the lock is contended in the database, as between processes; the
// last one starts three real server processes.
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { createDb, type Db } from '../../lib/db';
import { createLogger } from '../../lib/logger';
import { liveMigrator, MARK, whileMigrating } from '../../lib/migration-mark';
import { prepareDatabase } from '../../lib/server';
import { createTestDatabase, DB_KIND, LogCollector, testConfig, type TestDatabase } from '../helpers/harness';
import { spawnServerProcess, startServerProcess } from '../helpers/server-process';
import { until } from '../helpers/until';

const ROOT = path.join(import.meta.dirname, '../..');
const run = promisify(execFile);

const MIGRATIONS = fs
  .readdirSync(path.join(ROOT, 'migrations'))
  .filter((file) => /\.(ts|js)$/.test(file)).length;

/** A logger whose JSON lines land in `out.lines` (debug and up). */
const loggerInto = (out: LogCollector) => createLogger({ level: 'debug', format: 'json', out });
const messages = (logs: LogCollector) =>
  logs.lines.map((line) => JSON.parse(line) as { level: number; msg: string });

/** The demo seed's rows (seeds/01_demo.ts): 3 accounts, 8 categories, 5 products. */
const SEEDED = { members: 3, categories: 8, products: 5 };
async function demoRows(db: Db) {
  const rows = async (table: string) => Number((await db(table).count({ n: '*' }))[0].n);
  return {
    members: await rows('members'),
    categories: await rows('categories'),
    products: await rows('products'),
  };
}

let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  await database?.drop();
});

test.serial(
  'three instances starting together on a fresh database all migrate and seed, each once',
  async (t) => {
    const config = testConfig(database.env);
    const logs = new LogCollector();
    const logger = loggerInto(logs);
    const dbs = [1, 2, 3].map(() => createDb(config.database, undefined, logger));
    try {
      await Promise.all(
        dbs.map((db) => prepareDatabase(db, { ...config, migrateOnStart: true, seedOnStart: true }, logger)),
      );
      const names = (await dbs[0]('knex_migrations').select('name')).map((row) => String(row.name));
      t.is(names.length, MIGRATIONS);
      t.is(new Set(names).size, MIGRATIONS, 'no migration ran twice');
      t.deepEqual(await demoRows(dbs[0]), SEEDED, 'the demo seed wrote its rows once');
      const lock = await dbs[0]('knex_migrations_lock').first('is_locked');
      t.is(Number(lock.is_locked), 0, 'the lock is free again');
      const said = messages(logs).map((line) => line.msg);
      t.is(said.filter((msg) => msg.startsWith('Applied ')).length, 1, 'one instance applied the migrations');
      t.log(`${said.filter((msg) => msg.startsWith('Another instance is migrating')).length} of 3 waited`);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
    }
  },
);

test.serial('a lock nobody releases fails the start after the wait, naming how to clear it', async (t) => {
  const config = testConfig(database.env);
  const logs = new LogCollector();
  const logger = loggerInto(logs);
  const db = createDb(config.database, undefined, logger);
  try {
    await db.migrate.latest();
    await db('knex_migrations_lock').update({ is_locked: 1 });
    const started = Date.now();
    const err = await t.throwsAsync(
      prepareDatabase(db, { ...config, migrateOnStart: true, migrateLockWaitMs: 600 }, logger),
    );
    t.true(Date.now() - started >= 600, 'it waited for the lock first');
    t.regex(err!.message, /migration lock is still taken after 600 ms/);
    t.regex(err!.message, /npm run db:unlock/);
    // Said once; knex's own two lines per refused attempt are debug, not a warning every 250 ms.
    const lines = messages(logs);
    t.is(lines.filter((line) => line.msg.startsWith('Another instance is migrating')).length, 1);
    t.deepEqual(
      lines.filter((line) => line.level >= 40),
      [],
    );

    // The hint works: `npm run db:unlock` (its script, as npm runs it) frees the lock, and the start goes on.
    const unlock = await run(process.execPath, ['--import', 'tsx', 'scripts/db.ts', 'unlock'], {
      cwd: ROOT,
      env: { ...process.env, ...database.env, NODE_ENV: 'test' },
    });
    t.regex(unlock.stdout, /Migration lock cleared/);
    await prepareDatabase(db, { ...config, migrateOnStart: true, migrateLockWaitMs: 600 }, logger);
    t.is(Number((await db('knex_migrations_lock').first('is_locked')).is_locked), 0);
  } finally {
    await db('knex_migrations_lock').update({ is_locked: 0 });
    await db.destroy();
  }
});

/** `npm run db:unlock` as npm runs it: its exit code and what it said. */
async function unlock(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'scripts/db.ts', 'unlock', ...args],
      {
        cwd: ROOT,
        env: { ...process.env, ...database.env, NODE_ENV: 'test' },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test.serial(
  "db:unlock leaves a live migrator's lock alone (MariaDB), and clears it once that migrator is gone",
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass("SQLite has no server lock to tell a live migrator by: db:unlock is the operator's call there");
      return;
    }
    const config = testConfig(database.env);
    const db = createDb(config.database);
    try {
      await db.migrate.latest();
      let finish!: () => void;
      const migrating = new Promise<void>((resolve) => (finish = resolve));
      // A migrator at work: it holds the mark and knex's lock.
      const migrator = whileMigrating(db, async () => {
        await db('knex_migrations_lock').update({ is_locked: 1 });
        await migrating;
      });
      await until(
        async () => (await liveMigrator(db)) !== null,
        5000,
        () => 'the mark was never taken',
      );
      const refused = await unlock();
      t.is(refused.code, 1);
      t.regex(refused.stderr, /A migrator is running \(database connection \d+\): its lock stays/);
      t.is(Number((await db('knex_migrations_lock').first('is_locked')).is_locked), 1, 'the lock stays');
      const forced = await unlock('--force');
      t.is(forced.code, 0);
      t.regex(forced.stdout, /Migration lock cleared/);
      t.is(Number((await db('knex_migrations_lock').first('is_locked')).is_locked), 0);

      // The migrator ends (or its connection does: the server drops the mark either way); the lock it left is
      // then cleared without --force.
      await db('knex_migrations_lock').update({ is_locked: 1 });
      finish();
      await migrator;
      t.is(await liveMigrator(db), null);
      const cleared = await unlock();
      t.is(cleared.code, 0, cleared.stderr);
      t.is(Number((await db('knex_migrations_lock').first('is_locked')).is_locked), 0);
    } finally {
      await db('knex_migrations_lock').update({ is_locked: 0 });
      await db.destroy();
    }
  },
);

test.serial(
  'seed:demo migrates only holding the mark: it does not run beside a live migrator (MariaDB)',
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass('SQLite has no server lock: its migrators take turns on knex’s lock alone');
      return;
    }
    const db = createDb(testConfig(database.env).database);
    try {
      await db.migrate.latest();
      let finish!: () => void;
      const migrating = new Promise<void>((resolve) => (finish = resolve));
      const migrator = whileMigrating(db, () => migrating);
      await until(
        async () => (await liveMigrator(db)) !== null,
        5000,
        () => 'the mark was never taken',
      );
      const members = Number((await db('members').count({ n: '*' }).first())?.n);
      const seeded = await run(
        process.execPath,
        ['--import', 'tsx', 'scripts/seed-demo.ts', '--products', '0'],
        {
          cwd: ROOT,
          env: { ...process.env, ...database.env, NODE_ENV: 'test' },
        },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => err,
      );
      t.is(seeded.code, 1);
      t.regex(seeded.stderr, /Another migrator is running/);
      t.is(Number((await db('members').count({ n: '*' }).first())?.n), members, 'nothing was seeded');
      finish();
      await migrator;
    } finally {
      await db.destroy();
    }
  },
);

test('every migrator run of the shipped code holds the mark: no migrate call outside lib/migration-mark.ts', (t) => {
  const sources = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) return sources(relative);
      return entry.name.endsWith('.ts') ? [relative] : [];
    });
  const files = ['actors', 'bench', 'lib', 'routes', 'scripts', 'seeds']
    .flatMap(sources)
    .concat('knexfile.ts');
  const calls = files.flatMap((file) =>
    [
      ...fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\.migrate\.(latest|rollback|up|down)\(/g),
    ].map((match) => `${file}: migrate.${match[1]}`),
  );
  t.deepEqual(
    calls.filter((call) => !call.startsWith('lib/migration-mark.ts')),
    [],
  );
  t.true(calls.length >= 2, 'the rule looks at the files that migrate');
});

test.serial(
  'the mark of a migrator whose connection died is gone at once: db:unlock clears what it left',
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass('MariaDB only');
      return;
    }
    const config = testConfig(database.env);
    const db = createDb(config.database);
    const crashed = createDb(config.database);
    try {
      await db.migrate.latest();
      // The migrator's mark, taken the way whileMigrating takes it, on a connection that then dies mid-run.
      const [[{ thread }]] = await crashed.raw(
        `SELECT CONNECTION_ID() AS thread, GET_LOCK(${MARK}, 0) AS taken`,
      );
      await db('knex_migrations_lock').update({ is_locked: 1 });
      t.is(await liveMigrator(db), Number(thread));
      await db.raw(`KILL ${Number(thread)}`);
      await until(
        async () => (await liveMigrator(db)) === null,
        5000,
        () => 'the mark outlived its connection',
      );
      const cleared = await unlock();
      t.is(cleared.code, 0, cleared.stderr);
      t.is(Number((await db('knex_migrations_lock').first('is_locked')).is_locked), 0);
    } finally {
      await db('knex_migrations_lock').update({ is_locked: 0 });
      await crashed.destroy();
      await db.destroy();
    }
  },
);

test.serial(
  'a migrator that cannot take the mark does not run: it waits for the one that holds it (MariaDB)',
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass('MariaDB only');
      return;
    }
    const config = testConfig(database.env);
    const db = createDb(config.database);
    const other = createDb(config.database);
    try {
      await db.migrate.latest();
      // Another migrator's mark, on its own connection; knex's lock itself is free.
      await other.raw(`SELECT GET_LOCK(${MARK}, 0) AS taken`);
      let ran = false;
      const refused = await t.throwsAsync(
        whileMigrating(db, async () => {
          ran = true;
        }),
      );
      t.is(refused!.name, 'MigrationLocked');
      t.false(ran, 'no migrator runs without the mark, so db:unlock can trust it');
      const waited = await t.throwsAsync(
        prepareDatabase(
          db,
          { ...config, migrateOnStart: true, seedOnStart: false, migrateLockWaitMs: 600 },
          loggerInto(new LogCollector()),
        ),
      );
      t.regex(waited!.message, /migration lock is still taken after 600 ms/);
      await other.raw(`SELECT RELEASE_LOCK(${MARK})`);
      await prepareDatabase(
        db,
        { ...config, migrateOnStart: true, seedOnStart: false, migrateLockWaitMs: 600 },
        loggerInto(new LogCollector()),
      );
      t.is(await liveMigrator(db), null);
    } finally {
      await other.destroy();
      await db.destroy();
    }
  },
);

test.serial(
  "two rows in knex's migration lock table (two instances created it at once) do not keep every start waiting",
  async (t) => {
    const fresh = await createTestDatabase();
    const config = testConfig(fresh.env);
    const logs = new LogCollector();
    const logger = loggerInto(logs);
    const db = createDb(config.database, undefined, logger);
    try {
      // knex's own tables, with the one lock row it inserts, and the second row a racing instance inserted.
      await db.migrate.currentVersion();
      await db('knex_migrations_lock').insert({ is_locked: 0 });
      t.is((await db('knex_migrations_lock').select('index')).length, 2);
      await prepareDatabase(db, { ...config, migrateOnStart: true, migrateLockWaitMs: 3000 }, logger);
      t.is((await db('knex_migrations').select('name')).length, MIGRATIONS);
      t.deepEqual(
        (await db('knex_migrations_lock').select('is_locked')).map((row) => Number(row.is_locked)),
        [0],
      );
      t.true(messages(logs).some((line) => /migration lock table had 2 rows/.test(line.msg)));
    } finally {
      await db.destroy();
      await fresh.drop();
    }
  },
);

test.serial(
  'SIGTERM while the server process waits for the migration lock: it stops at once with 0, the lock untouched',
  async (t) => {
    const config = testConfig(database.env);
    const db = createDb(config.database);
    try {
      await db.migrate.latest();
      await db('knex_migrations_lock').update({ is_locked: 1 });
      const server = spawnServerProcess({ ...database.env, MIGRATE_LOCK_WAIT_MS: '60000' });
      const deadline = Date.now() + 30_000;
      while (!server.output().includes('Another instance is migrating') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      t.true(server.output().includes('Another instance is migrating'), server.output());
      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      const ended = await server.ended;
      t.deepEqual(ended, { code: 0, signal: null }, server.output());
      t.true(Date.now() - signalledAt < 2000, `stopped after ${Date.now() - signalledAt} ms`);
      t.regex(server.output(), /SIGTERM received, shutting down once started/);
      t.regex(server.output(), /Stopped while waiting for the migration lock; nothing was started/);
      // Still the other migrator's: a stopped waiter neither took nor freed it.
      t.is(Number((await db('knex_migrations_lock').first('is_locked')).is_locked), 1);
    } finally {
      await db('knex_migrations_lock').update({ is_locked: 0 });
      await db.destroy();
    }
  },
);

// knex's own tables' race (both instances found them missing, one CREATE failed with "already exists") is waited
// out like the lock, but one that is still failing when the wait runs out is no race: the start fails with
// knex's own error, not the lock's hint. On SQLite a view named knex_migrations makes that failure last (knex
// looks for a table of that name, finds none and cannot create it); on MySQL knex's check finds the view.
const sqliteTest = DB_KIND === 'sqlite' ? test.serial : test.serial.skip;

sqliteTest("knex's tables still failing after the wait fail the start with knex's own error", async (t) => {
  const fresh = await createTestDatabase();
  const config = testConfig(fresh.env);
  const logs = new LogCollector();
  const logger = loggerInto(logs);
  const db = createDb(config.database, undefined, logger);
  try {
    await db.raw('CREATE VIEW knex_migrations AS SELECT 1 AS id');
    const started = Date.now();
    // better-sqlite3's SqliteError inherits from Error without being one of the engine's native errors.
    const err = (await t.throwsAsync(
      prepareDatabase(db, { ...config, migrateOnStart: true, migrateLockWaitMs: 600 }, logger),
      { any: true },
    )) as Error | undefined;
    t.true(Date.now() - started >= 600, 'it waited first, as for a race');
    t.regex(err!.message, /knex_migrations. already exists/);
    t.notRegex(err!.message, /migration lock|db:unlock/);
    t.is(
      messages(logs).filter((line) => line.msg.startsWith('Another instance is migrating')).length,
      1,
      'it said once that it waited',
    );
  } finally {
    await db.destroy();
    await fresh.drop();
  }
});

// Several instances share MySQL/MariaDB; SQLite is the single embedded instance's (and three connections of one
// process would wait for one another's write lock synchronously, on the one event loop).
const sharedDatabaseTest = DB_KIND === 'mysql' ? test.serial : test.serial.skip;

sharedDatabaseTest('three demo seeds at once on a migrated database write each row once', async (t) => {
  // As when the migrating instance seeds while the others, done waiting, seed too (bcrypt at the default cost
  // makes that window ~1 s wide).
  const fresh = await createTestDatabase();
  const config = testConfig(fresh.env);
  const logger = loggerInto(new LogCollector());
  const dbs = [1, 2, 3].map(() => createDb(config.database, undefined, logger));
  try {
    await dbs[0].migrate.latest();
    await Promise.all(
      dbs.map((db) => prepareDatabase(db, { ...config, migrateOnStart: false, seedOnStart: true }, logger)),
    );
    t.deepEqual(await demoRows(dbs[0]), SEEDED);
  } finally {
    await Promise.all(dbs.map((db) => db.destroy()));
    await fresh.drop();
  }
});

sharedDatabaseTest(
  'three server processes started together on a fresh database all listen and answer; migrations and the seed ran once',
  async (t) => {
    // The real entry point (`lib/server.ts`, as `npm start` runs it), three times at once, as an orchestrator
    // rolling out replicas does: the in-process pools above contend for the same lock, these are processes.
    const fresh = await createTestDatabase();
    const env = {
      ...fresh.env,
      MIGRATE_ON_START: 'true',
      SEED_ON_START: 'true',
      JWT_SECRET: crypto.randomBytes(32).toString('hex'),
    };
    const started = await Promise.allSettled([1, 2, 3].map(() => startServerProcess(env)));
    const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const db = createDb(testConfig(fresh.env).database);
    try {
      t.deepEqual(
        started.map((result) => (result.status === 'fulfilled' ? 'listening' : String(result.reason))),
        ['listening', 'listening', 'listening'],
      );
      for (const server of servers) {
        const response = await fetch(`${server.url}/api/v1/categories`);
        t.is(response.status, 200);
        t.is(((await response.json()) as unknown[]).length, SEEDED.categories, "the seed's categories, once");
      }
      const names = (await db('knex_migrations').select('name')).map((row) => String(row.name));
      t.is(names.length, MIGRATIONS);
      t.is(new Set(names).size, MIGRATIONS, 'no migration ran twice');
      t.deepEqual(await demoRows(db), SEEDED, 'the demo seed wrote its rows once');
      const applied = servers.filter((server) => /Applied \d+ migration/.test(server.output()));
      t.is(applied.length, 1, 'one process applied the migrations');
    } finally {
      for (const server of servers) server.child.kill('SIGKILL');
      await Promise.all(servers.map((server) => server.exited));
      await db.destroy();
      await fresh.drop();
    }
  },
);
