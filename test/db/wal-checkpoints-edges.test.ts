// Edges of SQLite's checkpoint worker (lib/wal-checkpoints.ts) that a mutation hunt found unpinned: its statistics
// (frames a reader holds back are backlog; an empty checkpoint is not counted), failures counted and logged, and
// the service's own connection checkpointing by itself only past 10,000 pages.
import test from 'ava';
import { createDb } from '../../lib/db';
import { createLogger } from '../../lib/logger';
import { startWalCheckpoints } from '../../lib/wal-checkpoints';
import { createTestDatabase, DB_KIND, LogCollector, startTestApp, testConfig } from '../helpers/harness';
import { until } from '../helpers/until';
import { RawDatabase } from '../helpers/raw-sqlite';

const sqliteOnly = DB_KIND === 'sqlite' ? test : test.skip;

sqliteOnly(
  'checkpoint statistics: frames a reader holds back are backlog, and a checkpoint that copied nothing is not counted',
  async (t) => {
    const database = await createTestDatabase('sqlite');
    const config = testConfig({ ...database.env, SQLITE_CHECKPOINT_INTERVAL_MS: '10' });
    const setup = createDb(config.database);
    await setup.migrate.latest();
    await setup.destroy();
    const { filename } = config.database as { filename: string };
    const writer = new RawDatabase(filename);
    writer.pragma('wal_autocheckpoint = 0'); // only the worker copies frames
    writer.exec('CREATE TABLE held_filler (id INTEGER PRIMARY KEY, payload BLOB)');
    const logger = createLogger({ level: 'fatal', format: 'json', out: new LogCollector() });
    const checkpoints = await startWalCheckpoints(config.database, logger);
    const reader = new RawDatabase(filename);
    try {
      if (!checkpoints) throw new Error('the checkpoint worker did not start');
      await until(
        () => checkpoints.stats().frames > 0 && checkpoints.stats().backlog === 0,
        5_000,
        () => JSON.stringify(checkpoints.stats()),
      );
      const base = checkpoints.stats();
      // A snapshot from before the writes: no checkpoint may copy what follows it until it ends.
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM held_filler').get();
      const insert = writer.prepare('INSERT INTO held_filler (payload) VALUES (randomblob(3000))');
      for (let commit = 0; commit < 10; commit++) insert.run();
      await until(
        () => checkpoints.stats().backlog > 0,
        5_000,
        () => `no backlog reported: ${JSON.stringify(checkpoints.stats())}`,
      );
      t.is(checkpoints.stats().frames, base.frames, 'nothing was copied');
      t.is(
        checkpoints.stats().checkpoints,
        base.checkpoints,
        'a checkpoint that copied nothing is not counted',
      );
      reader.exec('COMMIT');
      await until(
        () => checkpoints.stats().backlog === 0 && checkpoints.stats().frames > base.frames,
        5_000,
        () => JSON.stringify(checkpoints.stats()),
      );
      t.true(checkpoints.stats().checkpoints > base.checkpoints);
      t.is(checkpoints.stats().failures, 0);
    } finally {
      reader.close();
      writer.close();
      await checkpoints?.stop();
      await database.drop();
    }
  },
);

sqliteOnly('a checkpoint the worker reports failed is counted and logged as a warning', async (t) => {
  const database = await createTestDatabase('sqlite');
  const config = testConfig({ ...database.env, SQLITE_CHECKPOINT_INTERVAL_MS: '60000' });
  const out = new LogCollector();
  const logger = createLogger({ level: 'warn', format: 'json', out });
  // A stand-in for the worker's script: it starts as the checkpointer does, then reports two failed checkpoints.
  const failing = `
    const { parentPort } = require('node:worker_threads');
    parentPort.postMessage({ type: 'ready' });
    setTimeout(() => {
      parentPort.postMessage({ type: 'failed', message: 'disk I/O error' });
      parentPort.postMessage({ type: 'failed', message: 'disk I/O error' });
    }, 20);
    parentPort.on('message', (m) => m === 'stop' && parentPort.postMessage({ type: 'stopped' }));
  `;
  const checkpoints = await startWalCheckpoints(config.database, logger, failing);
  try {
    if (!checkpoints) throw new Error('the stand-in worker did not start');
    await until(
      () => checkpoints.stats().failures === 2,
      5_000,
      () => JSON.stringify(checkpoints.stats()),
    );
    t.deepEqual(checkpoints.stats(), { checkpoints: 0, frames: 0, backlog: 0, failures: 2 });
    const warnings = out.lines.filter((line) => line.includes('WAL checkpoint failed: disk I/O error'));
    t.is(warnings.length, 2, out.text);
    t.is(JSON.parse(warnings[0]).level, 40, 'a warning');
  } finally {
    await checkpoints?.stop();
    await database.drop();
  }
});

sqliteOnly(
  "the service's own connection checkpoints by itself only past 10,000 pages, ten times SQLite's default",
  async (t) => {
    const app = await startTestApp();
    try {
      const [row] = (await app.db.raw('PRAGMA wal_autocheckpoint')) as Array<{ wal_autocheckpoint: number }>;
      t.is(row.wal_autocheckpoint, 10_000);
    } finally {
      await app.close();
    }
  },
);
