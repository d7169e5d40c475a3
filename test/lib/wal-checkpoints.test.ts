// SQLite's WAL checkpoints in a worker thread (lib/wal-checkpoints.ts): the worker copies the log into the
// database file while the service's own connection only appends, the log stays bounded, stop() ends the thread,
// a worker that cannot start leaves SQLite's own checkpoints in place (also in the running service), and one that
// dies is logged as an error.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import type { Knex } from 'knex';
import { createDb } from '../../lib/db';
import { createLogger } from '../../lib/logger';
import { SAFETY_NET_PAGES, startWalCheckpoints, type WalCheckpoints } from '../../lib/wal-checkpoints';
import {
  createTestDatabase,
  DB_KIND,
  LogCollector,
  startTestApp,
  testConfig,
  type TestDatabase,
} from '../helpers/harness';
import { createMember, login } from '../helpers/factories';
import { RawDatabase, type RawSqlite } from '../helpers/raw-sqlite';

// These tests make their own SQLite file: once is enough (the SQLite pass); the MySQL case runs in both.
const sqliteTest = DB_KIND === 'sqlite' ? test : test.skip;
const FRAME_BYTES = 4096;
const INTERVAL_MS = 20;

function quietLogger(level: 'warn' | 'fatal' = 'fatal') {
  const out = new LogCollector();
  return { out, logger: createLogger({ level, format: 'json', out }) };
}

async function migratedSqlite(env: Record<string, string> = {}) {
  const database = await createTestDatabase('sqlite');
  const config = testConfig({ ...database.env, ...env });
  const setup = createDb(config.database);
  await setup.migrate.latest();
  await setup.destroy();
  return { database, config };
}

async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

async function autocheckpointPages(db: Knex): Promise<number> {
  const rows = (await db.raw('PRAGMA wal_autocheckpoint')) as Array<{ wal_autocheckpoint: number }>;
  return rows[0].wal_autocheckpoint;
}

/**
 * A migrated SQLite file with its checkpoint worker (every `intervalMs`) and a service connection (`db`, from
 * the worker's settings); all three end after `run`, also when it fails (a second stop() changes nothing).
 */
async function withWorker(
  intervalMs: number,
  run: (worker: { checkpoints: WalCheckpoints; db: Knex; warnings: LogCollector }) => Promise<void>,
): Promise<void> {
  const { database, config } = await migratedSqlite({ SQLITE_CHECKPOINT_INTERVAL_MS: String(intervalMs) });
  let checkpoints: WalCheckpoints | null = null;
  let db: Knex | undefined;
  try {
    const { out: warnings, logger } = quietLogger('warn');
    checkpoints = await startWalCheckpoints(config.database, logger);
    if (!checkpoints) throw new Error('the checkpoint worker did not start');
    db = createDb(checkpoints.database);
    await run({ checkpoints, db, warnings });
  } finally {
    await db?.destroy();
    await checkpoints?.stop();
    await database.drop();
  }
}

sqliteTest('the worker copies the log into the database file; the log stays bounded', async (t) => {
  await withWorker(INTERVAL_MS, async ({ checkpoints, db, warnings }) => {
    t.truthy(checkpoints);
    // The service's connection checkpoints by itself only past the safety net, which this test stays under.
    t.is(await autocheckpointPages(db), SAFETY_NET_PAGES);
    await db.schema.createTable('wal_filler', (table) => {
      table.increments('id');
      table.binary('payload');
    });
    const rounds = 8;
    for (let round = 0; round < rounds; round++) {
      const framesBefore = checkpoints.stats().frames;
      // ~350 frames per round, in 30 commits (each commit appends its pages to the log)
      for (let commit = 0; commit < 30; commit++) {
        await db.transaction(async (trx) => {
          for (let row = 0; row < 10; row++) {
            await trx.raw('INSERT INTO wal_filler (payload) VALUES (randomblob(3000))');
          }
        });
      }
      // Idle for three intervals: the worker has copied the whole log, so the next round's first commit starts
      // it over (a commit that starts while a checkpoint is at work appends instead).
      await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 3));
      t.true(
        await waitFor(() => checkpoints.stats().frames > framesBefore && checkpoints.stats().backlog === 0),
        `round ${round}: ${JSON.stringify(checkpoints.stats())}`,
      );
    }
    const { frames, checkpoints: runs, failures } = checkpoints.stats();
    t.true(frames >= rounds * 300 * 0.9, `frames copied: ${frames}`);
    t.true(runs >= rounds, `checkpoints with work: ${runs}`);
    t.is(failures, 0, warnings.text);
    // The log was started over at (nearly) every round: the file holds about one round's frames, two if one
    // restart was missed on a busy machine (with no worker and the safety net it would hold them all).
    const walBytes = fs.statSync(`${checkpoints.database.filename}-wal`).size;
    t.true(walBytes < (frames * FRAME_BYTES) / 3, `WAL file ${walBytes} bytes for ${frames} frames`);
    const stored = (await db('wal_filler').count({ n: '*' }))[0].n;
    t.is(Number(stored), rounds * 30 * 10);
  });
});

sqliteTest('a log started over at the length of the last one is counted too', async (t) => {
  await withWorker(INTERVAL_MS, async ({ checkpoints, db, warnings }) => {
    await db.schema.createTable('wal_counter', (table) => {
      table.increments('id');
      table.integer('n');
    });
    await db('wal_counter').insert({ n: 0 });
    t.true(await waitFor(() => checkpoints.stats().frames > 0 && checkpoints.stats().backlog === 0));
    // Every round: the log is fully copied, so the round's one commit starts it over and writes the same
    // frames as the round before (log and checkpointed counts identical to the last checkpoint's). The first
    // round is not counted: it may also copy what the table's creation left (the stats waited for above can
    // come from a checkpoint that ran between the CREATE and the INSERT).
    const copiedPerRound: number[] = [];
    for (let round = 0; round < 5; round++) {
      const framesBefore = checkpoints.stats().frames;
      await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 3));
      await db('wal_counter').increment('n', 1);
      t.true(
        await waitFor(() => checkpoints.stats().frames > framesBefore && checkpoints.stats().backlog === 0),
        `round ${round}: ${JSON.stringify(checkpoints.stats())}`,
      );
      if (round > 0) copiedPerRound.push(checkpoints.stats().frames - framesBefore);
    }
    t.true(
      copiedPerRound.every((frames) => frames > 0 && frames === copiedPerRound[0]),
      `${copiedPerRound}`,
    );
    t.is(checkpoints.stats().failures, 0, warnings.text);
  });
});

function checkpointRow(db: RawSqlite, mode: 'PASSIVE' | 'RESTART') {
  return (
    db.pragma(`wal_checkpoint(${mode})`) as Array<{ busy: number; log: number; checkpointed: number }>
  )[0];
}

function walSalts(filename: string): string {
  const fd = fs.openSync(`${filename}-wal`, 'r');
  try {
    const salts = Buffer.alloc(8);
    fs.readSync(fd, salts, 0, 8, 16);
    return salts.toString('hex');
  } finally {
    fs.closeSync(fd);
  }
}

sqliteTest(
  'checkpoints that find another checkpointer at work are skipped: the frames copied are counted once',
  async (t) => {
    const { database, config } = await migratedSqlite({ SQLITE_CHECKPOINT_INTERVAL_MS: '10' });
    const { filename } = config.database as { filename: string };
    const writer = new RawDatabase(filename);
    writer.pragma('wal_autocheckpoint = 0'); // only the worker copies frames
    writer.exec('CREATE TABLE busy_filler (id INTEGER PRIMARY KEY, payload BLOB)');
    const checkpoints = (await startWalCheckpoints(config.database, quietLogger().logger)) as WalCheckpoints;
    const other = new RawDatabase(filename, { timeout: 1000 });
    const reader = new RawDatabase(filename);
    try {
      t.true(await waitFor(() => checkpoints.stats().frames > 0 && checkpoints.stats().backlog === 0));
      const base = { frames: checkpoints.stats().frames, log: checkpointRow(other, 'PASSIVE').log };
      const baseSalts = walSalts(filename);
      // A reader's snapshot from before the writes: no checkpoint can copy what follows it until it ends.
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM busy_filler').get();
      const insert = writer.prepare('INSERT INTO busy_filler (payload) VALUES (randomblob(3000))');
      for (let commit = 0; commit < 10; commit++) {
        writer.exec('BEGIN');
        for (let row = 0; row < 10; row++) insert.run();
        writer.exec('COMMIT');
      }
      // Another checkpointer: a RESTART checkpoint holds the checkpoint lock while it waits up to 1 s for the
      // reader (this thread blocks meanwhile), so the worker's checkpoints, every 10 ms, find it busy.
      const restart = checkpointRow(other, 'RESTART');
      t.is(restart.busy, 1, JSON.stringify(restart));
      reader.exec('COMMIT');
      t.true(
        await waitFor(() => checkpoints.stats().backlog === 0 && checkpoints.stats().frames > base.frames),
        JSON.stringify(checkpoints.stats()),
      );
      const end = checkpointRow(other, 'PASSIVE');
      t.is(end.checkpointed, end.log, 'the worker copied the whole log');
      // Frames the writes added to the log: all of it if the first write started the log over, else the growth.
      const added = walSalts(filename) === baseSalts ? end.log - base.log : end.log;
      t.true(added >= 100, `${added} frames`);
      t.is(checkpoints.stats().frames - base.frames, added, JSON.stringify(checkpoints.stats()));
      t.is(checkpoints.stats().failures, 0);
    } finally {
      reader.close();
      other.close();
      writer.close();
      await checkpoints.stop();
      await database.drop();
    }
  },
);

sqliteTest('stop() ends the worker once, after a last checkpoint', async (t) => {
  await withWorker(60_000, async ({ checkpoints, db }) => {
    await db.schema.createTable('wal_filler', (table) => table.increments('id'));
    await db('wal_filler').insert({});
    t.is(checkpoints.stats().frames, 0, 'no checkpoint before the first interval');
    // (The service closes its own connection first, which checkpoints by itself; here it stays open.)
    const first = checkpoints.stop();
    t.is(checkpoints.stop(), first);
    await first;
    t.true(checkpoints.stats().frames > 0, 'the last checkpoint copied the log');
    t.is(checkpoints.stats().backlog, 0);
  });
});

sqliteTest('a forgotten stop() does not keep the process alive', async (t) => {
  const { database, config } = await migratedSqlite({ SQLITE_CHECKPOINT_INTERVAL_MS: '60000' });
  try {
    // A process that starts the worker and never stops it: it must exit by itself (once its work is done).
    const script = [
      'const { startWalCheckpoints } = await import("./lib/wal-checkpoints.ts");',
      'const { createLogger } = await import("./lib/logger.ts");',
      `const started = await startWalCheckpoints(${JSON.stringify(config.database)}, createLogger({ level: 'fatal' }));`,
      'process.stdout.write(started ? "started" : "not started");',
    ].join('\n');
    const started = Date.now();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { env: { PATH: process.env.PATH }, timeout: 20_000, killSignal: 'SIGKILL' },
    );
    t.is(stdout, 'started');
    // A process the worker holds never exits: killed at 20 s, the call above rejects. This bounds a slow exit.
    t.true(Date.now() - started < 15_000, `exited after ${Date.now() - started} ms`);
  } finally {
    await database.drop();
  }
});

sqliteTest(
  'a worker that cannot open the database leaves SQLite its own checkpoints, with a warning',
  async (t) => {
    const database = await createTestDatabase('sqlite');
    try {
      const { out, logger } = quietLogger('warn');
      const missing = {
        client: 'sqlite' as const,
        filename: path.join(database.dataDir, 'no-such-dir', 'marketplace.sqlite'),
        checkpointIntervalMs: 20,
      };
      t.is(await startWalCheckpoints(missing, logger), null);
      t.regex(
        out.text,
        /SQLite checkpoints stay on the event loop: the checkpoint worker did not start \(.+\)/,
      );
    } finally {
      await database.drop();
    }
  },
);

sqliteTest(
  'a worker that exits while the service runs is logged as an error; stop() still ends',
  async (t) => {
    const { database, config } = await migratedSqlite({ SQLITE_CHECKPOINT_INTERVAL_MS: '60000' });
    try {
      const { out, logger } = quietLogger('warn');
      // A stand-in for the worker's script: it starts as the checkpointer does, then its thread ends (code 3).
      const dies = `
      const { parentPort } = require('node:worker_threads');
      parentPort.postMessage({ type: 'ready' });
      setTimeout(() => process.exit(3), 50);
    `;
      const checkpoints = await startWalCheckpoints(config.database, logger, dies);
      t.truthy(checkpoints, 'it started');
      const exitedLine = new RegExp(
        `WAL checkpoint worker exited \\(code 3\\); SQLite checkpoints on the event loop past ${SAFETY_NET_PAGES} pages`,
      );
      t.true(await waitFor(() => exitedLine.test(out.text)), out.text);
      t.is(JSON.parse(out.lines.find((line) => exitedLine.test(line))!).level, 50, 'logged as an error');
      await checkpoints!.stop();
      t.is(out.lines.filter((line) => exitedLine.test(line)).length, 1, 'once');
    } finally {
      await database.drop();
    }
  },
);

test('no worker for MySQL, nor with SQLITE_CHECKPOINT_INTERVAL_MS=0', async (t) => {
  const { out, logger } = quietLogger('warn');
  t.is(
    await startWalCheckpoints({ client: 'mysql', url: 'mysql://root@127.0.0.1:3306/x', poolMax: 1 }, logger),
    null,
  );
  // An existing file, so a worker would start: 0 means none is tried (a failed start would log a warning).
  const { database, config } = await migratedSqlite({ SQLITE_CHECKPOINT_INTERVAL_MS: '0' });
  try {
    t.is(await startWalCheckpoints(config.database, logger), null);
  } finally {
    await database.drop();
  }
  t.is(out.text, '', 'no worker was tried');
});

sqliteTest('the service runs its checkpoints in the worker by default; 0 turns that off', async (t) => {
  const database: TestDatabase = await createTestDatabase('sqlite');
  try {
    const app = await startTestApp({ database });
    try {
      t.is(await autocheckpointPages(app.db), SAFETY_NET_PAGES);
    } finally {
      await app.close();
    }
    const off = await startTestApp({ database, env: { SQLITE_CHECKPOINT_INTERVAL_MS: '0' } });
    try {
      t.is(await autocheckpointPages(off.db), 1000, "SQLite's default");
    } finally {
      await off.close();
    }
  } finally {
    await database.drop();
  }
});

sqliteTest(
  'a service whose checkpoint worker cannot start serves with SQLite its own checkpoints, with a warning',
  async (t) => {
    // A stand-in for the worker's script that fails before it is ready, as a worker that cannot load its driver.
    const fails = "throw new Error('no checkpointer here');";
    const app = await startTestApp({ logLevel: 'warn', service: { walCheckpointWorker: fails } });
    try {
      t.is(await autocheckpointPages(app.db), 1000, "SQLite's default, not the worker's safety net");
      t.regex(
        app.logs.text,
        /SQLite checkpoints stay on the event loop: the checkpoint worker did not start \(.*no checkpointer here.*\)/,
      );
      // The service works: a login writes its refresh token, and the database answers the readiness check.
      const member = await createMember(app);
      t.truthy((await login(app, member)).refreshToken);
      t.is((await app.request('GET', '/health/ready')).status, 200);
    } finally {
      await app.close();
    }
  },
);
