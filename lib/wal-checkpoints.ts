// SQLite's WAL checkpoints, run in a worker thread instead of on the event loop.
//
// better-sqlite3 is synchronous: whatever SQLite does inside a statement, the event loop waits for. In WAL mode
// the commit that takes the log past `wal_autocheckpoint` pages (1,000 by default) also copies the log into the
// database file and fsyncs it, inside that commit: 5-18 ms each in bench:keyword's mixed load, about one commit
// in 60 (bench/README.md, Keyword). A worker thread with its own connection checkpoints instead (PASSIVE: it never blocks the
// writer, and a checkpoint that finds a reader copies what it can), every `intervalMs`. The service's own
// connection keeps a much higher `wal_autocheckpoint` as a safety net, so the log stays bounded even if the
// worker stops. MySQL/MariaDB need none of this.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Config } from './config';
import type { Logger } from './logger';

type SqliteDatabase = Extract<Config['database'], { client: 'sqlite' }>;

/**
 * The service's connection checkpoints by itself only past this many pages (40 MB with 4 KB pages): never while
 * the worker keeps up, and still bounded if it does not.
 */
export const SAFETY_NET_PAGES = 10_000;

export interface WalCheckpointStats {
  /** checkpoints that found frames to copy */
  checkpoints: number;
  /** WAL frames copied into the database file */
  frames: number;
  /** frames in the log not yet copied, as of the last checkpoint (a reader's snapshot holds them back) */
  backlog: number;
  failures: number;
}

export interface WalCheckpoints {
  /** The database config for the service's own connection: SQLite's checkpoint threshold raised to the safety net. */
  database: SqliteDatabase;
  stats(): WalCheckpointStats;
  /** One last checkpoint, then the worker's connection closes and the thread exits. */
  stop(): Promise<void>;
}

type FromWorker =
  | { type: 'ready' }
  | { type: 'checkpointed'; frames: number; backlog: number }
  | { type: 'failed'; message: string }
  | { type: 'stopped' };

// Plain JavaScript: the worker does not run through tsx (loading it there costs ~300 ms per start).
// `wal_checkpoint` answers one row { busy, log, checkpointed }: frames in the log, frames of it now in the database.
const WORKER_SOURCE = `
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
try {
  // A lock another connection holds for a moment (the schema's first read, a recovery) is waited for here, in
  // the worker, rather than counted as a failure. The PASSIVE checkpoint itself never waits: SQLite calls no busy
  // handler for it, and answers busy instead.
  db = new Database(workerData.filename, { fileMustExist: true, timeout: 1000 });
} catch (err) {
  parentPort.postMessage({ type: 'failed', message: err.message });
  process.exit(1);
}
// Which log this is: the WAL header's salts (bytes 16-23) change whenever the writer starts the log over, so a
// new log of the same length as the last one is still told apart. '' while there is no log file.
const walFile = workerData.filename + '-wal';
const salts = Buffer.alloc(8);
function logId() {
  let fd;
  try {
    fd = fs.openSync(walFile, 'r');
  } catch {
    return '';
  }
  try {
    return fs.readSync(fd, salts, 0, 8, 16) === 8 ? salts.toString('hex') : '';
  } finally {
    fs.closeSync(fd);
  }
}
let last = { id: '', log: 0, checkpointed: 0 };
function checkpoint() {
  try {
    const before = logId();
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    const id = logId();
    // Another checkpointer held the lock (the service's safety net, a closing connection): nothing was learnt.
    if (row.busy || row.log < 0) return;
    // The writer started the log over meanwhile, so which log the counts are of is unknown: skipped. (The
    // frames this run copied of the old log then go uncounted; a window of microseconds, statistics only.)
    if (id !== before) return;
    if (id === last.id && row.log === last.log && row.checkpointed === last.checkpointed) return;
    // In a new log every frame checkpointed is new; in the same one, those past the last count.
    const copied = id === last.id ? Math.max(0, row.checkpointed - last.checkpointed) : Math.max(0, row.checkpointed);
    last = { id, log: row.log, checkpointed: row.checkpointed };
    parentPort.postMessage({ type: 'checkpointed', frames: copied, backlog: Math.max(0, row.log - row.checkpointed) });
  } catch (err) {
    parentPort.postMessage({ type: 'failed', message: err.message });
  }
}
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  // Messages arrive in order: when 'stopped' does, so has the last checkpoint's.
  parentPort.postMessage({ type: 'stopped' });
});
parentPort.postMessage({ type: 'ready' });
`;

/**
 * Starts the checkpoint worker for a SQLite database whose file exists (after migrations). Null for MySQL, when
 * `checkpointIntervalMs` is 0 (SQLite's own checkpoints, on the event loop), or when the worker cannot start
 * (logged; the service then runs as with 0).
 */
export async function startWalCheckpoints(
  database: Config['database'],
  logger: Logger,
  /** The worker's script (tests stand in one that fails in a given way); the checkpointer by default. */
  workerSource = WORKER_SOURCE,
): Promise<WalCheckpoints | null> {
  if (database.client !== 'sqlite' || !database.checkpointIntervalMs) return null;
  const log = logger.child({ component: 'Database' });
  const stats: WalCheckpointStats = { checkpoints: 0, frames: 0, backlog: 0, failures: 0 };
  const worker = new Worker(workerSource, {
    eval: true,
    // None of the process's node flags: the source is CommonJS whatever they say (`--input-type=module` would
    // make it a module), and no loader hooks (`--import tsx`) are needed for plain JavaScript.
    execArgv: [],
    workerData: {
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      filename: database.filename,
      intervalMs: database.checkpointIntervalMs,
    },
  });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  let ready = false;
  let stopping = false;
  const stoppedMessage = new Promise<void>((resolve) =>
    worker.on('message', (message: FromWorker) => message.type === 'stopped' && resolve()),
  );
  let startFailure = 'it exited';

  const started = await new Promise<boolean>((resolve) => {
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'ready') {
        ready = true;
        resolve(true);
      } else if (message.type === 'checkpointed') {
        if (message.frames > 0) stats.checkpoints += 1;
        stats.frames += message.frames;
        stats.backlog = message.backlog;
      } else if (message.type === 'failed' && !ready) {
        startFailure = message.message;
      } else if (message.type === 'failed') {
        stats.failures += 1;
        log.warn(`WAL checkpoint failed: ${message.message}`);
      }
    });
    worker.on('error', (err) => {
      if (!ready) startFailure = err.message;
      else log.error({ err }, `WAL checkpoint worker failed: ${err.message}`);
      resolve(false);
    });
    void exited.then((code) => {
      if (ready && !stopping) {
        log.error(
          `WAL checkpoint worker exited (code ${code}); SQLite checkpoints on the event loop past ${SAFETY_NET_PAGES} pages`,
        );
      }
      resolve(false);
    });
  });
  // A forgotten stop() must not keep a process alive. (After the listeners: on Node 20 a 'message' listener
  // added after unref() holds the process again.)
  worker.unref();
  if (!started) {
    log.warn(
      `SQLite checkpoints stay on the event loop: the checkpoint worker did not start (${startFailure})`,
    );
    await worker.terminate();
    return null;
  }

  let stopped: Promise<void> | null = null;
  return {
    database: { ...database, walAutocheckpointPages: SAFETY_NET_PAGES },
    stats: () => ({ ...stats }),
    stop: () =>
      (stopped ??= (async () => {
        stopping = true;
        // Held while it stops (unreferenced, the process could exit before the last checkpoint's answer).
        worker.ref();
        worker.postMessage('stop');
        await Promise.race([stoppedMessage, exited]);
        await worker.terminate();
      })()),
  };
}
