// Process entry point: validates config, prepares the database (migrations, seed outside production),
// listens, and shuts down gracefully on SIGTERM/SIGINT (stop accepting, finish in-flight requests,
// flush actors and notifications, close the pool, exit 0).
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { createApp, type AppBundle } from './app';
import { createCluster, type Cluster } from './cluster/cluster';
import { ConfigError, loadConfig, type Config } from './config';
import { createDb, type Db } from './db';
import { endWaitingLost } from './lost-connections';
import { migrateLatest } from './migration-mark';
import { createGracefulServer } from './graceful-server';
import { answerClientErrors } from './http/client-error';
import { startWalCheckpoints } from './wal-checkpoints';
import { createLogger, type Logger } from './logger';
import { seedDemo } from '../seeds/01_demo';

export interface RunningService {
  bundle: AppBundle;
  server: http.Server;
  db: Db;
  url: string;
  /** Graceful stop: no new connections, in-flight requests finish, background work flushed, pool closed. */
  shutdown(): Promise<void>;
}

/**
 * Another instance is migrating: knex's lock is taken (its LockError), or both created knex's own tables at
 * once (each checks they are missing, then creates them).
 */
function migratingElsewhere(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === 'MigrationLocked' ||
    (/already exists/.test(err.message) && /knex_migrations/.test(err.message))
  );
}

/**
 * knex inserts its migration lock's one row when it finds the lock table empty, so instances creating the table
 * at once can each insert one. With two rows knex's lock (an UPDATE that must change exactly one row) can never be
 * taken: both rows change, the lock is refused and rolled back, and every start waits for a lock nobody holds.
 * Rows beyond the first are removed; none of them is a lock held (while there are two, no lock can be taken).
 */
async function dropExtraLockRows(db: Db): Promise<number> {
  const rows = (await db('knex_migrations_lock').orderBy('index').select('index', 'is_locked')) as Array<{
    index: number;
    is_locked: number;
  }>;
  if (rows.length <= 1 || rows.some((row) => Number(row.is_locked) !== 0)) return 0;
  return db('knex_migrations_lock').whereNot('index', rows[0].index).delete();
}

/**
 * Applies pending migrations. Instances started together on a database with pending migrations (an
 * orchestrator rolling out replicas) meet at knex's migration lock: the one that takes it migrates, the others
 * wait until it is free (then find nothing pending) rather than fail. A lock still taken after
 * `migrateLockWaitMs` fails the start: a migrator that crashed leaves it taken.
 */
async function migrate(db: Db, config: Config, logger: Logger, stopWaiting?: AbortSignal): Promise<void> {
  const log = logger.child({ component: 'Database' });
  const deadline = Date.now() + config.migrateLockWaitMs;
  for (let told = false; ;) {
    try {
      const [, applied] = await migrateLatest(db);
      if (applied.length > 0) log.info(`Applied ${applied.length} migration(s)`);
      return;
    } catch (err) {
      if (!migratingElsewhere(err)) throw err;
      if ((err as Error).name === 'MigrationLocked') {
        const dropped = await dropExtraLockRows(db).catch(() => 0);
        if (dropped > 0) {
          log.warn(`knex's migration lock table had ${dropped + 1} rows (a race of its creation): kept one`);
          continue;
        }
      }
      if (Date.now() >= deadline) {
        // Still knex's tables' race after the whole wait is no race: its own error says what is wrong.
        if ((err as Error).name !== 'MigrationLocked') throw err;
        throw new Error(
          `The migration lock is still taken after ${config.migrateLockWaitMs} ms (MIGRATE_LOCK_WAIT_MS): ` +
            'if no instance is migrating, a migrator stopped holding it; clear it with `npm run db:unlock`',
          { cause: err },
        );
      }
      // Waiting holds nothing, so a stop signal ends the wait (a migration under way is never cut short).
      if (stopWaiting?.aborted) throw new StartStopped();
      if (!told) log.info('Another instance is migrating the database: waiting for it');
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 250));
      // Asked to stop while waiting: no new attempt, which could find the lock free and start migrating.
      if (stopWaiting?.aborted) throw new StartStopped();
    }
  }
}

/** A start given up on a stop signal while it waited for another instance's migration. */
export class StartStopped extends Error {
  constructor() {
    super('Stopped while waiting for the migration lock');
    this.name = 'StartStopped';
  }
}

export async function prepareDatabase(
  db: Db,
  config: Config,
  logger: Logger,
  stopWaiting?: AbortSignal,
): Promise<void> {
  if (config.migrateOnStart) await migrate(db, config, logger, stopWaiting);
  if (config.seedOnStart) await seedDemo(db, config);
}

export interface StartServiceOptions {
  /** The SQLite checkpoint worker's script (tests stand in one that fails); the checkpointer by default. */
  walCheckpointWorker?: string;
  /** Aborted: a wait for another instance's migration lock ends (StartStopped); nothing under way is cut short. */
  stopWaiting?: AbortSignal;
}

export async function startService(
  config: Config,
  logger: Logger,
  options: StartServiceOptions = {},
): Promise<RunningService> {
  // Migrations (DDL on large tables) may take longer than a request's statement timeout: no limits there.
  const setup = createDb(config.database, undefined, logger);
  try {
    await prepareDatabase(setup, config, logger, options.stopWaiting);
  } finally {
    await setup.destroy();
  }
  // SQLite: checkpoints in a worker thread, once the file exists (null for MySQL, when turned off, or when the
  // worker did not start: the connection then keeps SQLite's own checkpoints).
  const walCheckpoints = await startWalCheckpoints(config.database, logger, options.walCheckpointWorker);
  const db = createDb(walCheckpoints?.database ?? config.database, config.dbTimeouts, logger);
  const closeDb = async () => {
    await endWaitingLost(db);
    await db.destroy();
    await walCheckpoints?.stop();
  };
  // Cluster mode: NATS must answer at start (an instance that cannot join would serve a split brain of caches).
  let cluster: Cluster | null = null;
  let bundle: AppBundle;
  try {
    if (config.cluster) cluster = await createCluster({ config: config.cluster, logger });
    bundle = createApp({ config, db, logger, cluster });
    await bundle.services.start();
  } catch (err) {
    await cluster?.close().catch(() => undefined);
    await closeDb();
    throw err;
  }

  const graceful = createGracefulServer(bundle.handle, config.http);
  const { server } = graceful;
  server.on('clientError', answerClientErrors(logger));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://127.0.0.1:${port}`;

  let closing: Promise<void> | null = null;
  const shutdown = () =>
    (closing ??= (async () => {
      // in-flight requests are answered (the last one on each keep-alive socket with Connection: close)
      await graceful.drain(config.shutdownTimeoutMs);
      await bundle.services.stop();
      await closeDb();
    })());

  return { bundle, server, db, url, shutdown };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.log);
  const log = logger.child({ component: 'Server' });

  const stop = (running: RunningService) =>
    running.shutdown().then(
      () => {
        log.info('Shutdown complete');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'Shutdown failed');
        process.exit(1);
      },
    );
  // Listened for before starting: a signal during the start (migrations hold the database's migration lock) must
  // not kill the process halfway; the start finishes, then the service stops as it would once running.
  let service: RunningService | null = null;
  const signalled = new AbortController();
  const onSignal = (signal: string) => {
    if (signalled.signal.aborted) {
      // A second signal while stopping (Ctrl-C twice): exit now, as Node's default would. While starting it is
      // ignored: a migration under way must finish.
      if (service) {
        log.warn(`${signal} received again: exiting without finishing the shutdown`);
        process.exit(1);
      }
      return;
    }
    signalled.abort();
    log.info(`${signal} received, ${service ? 'shutting down' : 'shutting down once started'}`);
    if (service) void stop(service);
  };
  // `on`, not `once`: a second signal is onSignal's to decide, never Node's default (death mid-migration).
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  let started: RunningService;
  try {
    started = await startService(config, logger, { stopWaiting: signalled.signal });
  } catch (err) {
    if (err instanceof StartStopped) {
      log.info(`${err.message}; nothing was started`);
      process.exit(0);
    }
    log.fatal({ err }, `Failed to start: ${(err as Error).message}`);
    process.exit(1);
  }
  service = started;
  if (signalled.signal.aborted) {
    void stop(started);
    return;
  }
  const dbName = config.database.client === 'sqlite' ? `SQLite ${config.database.filename}` : 'MySQL';
  const clusterNote = config.cluster
    ? `, cluster ${config.cluster.prefix} as ${config.cluster.instanceId} with ${started.bundle.services.cluster?.ownedShards().length ?? 0} of ${config.cluster.shards} shards`
    : '';
  log.info(
    `Listening on ${config.host}:${(started.server.address() as { port: number }).port} (${dbName}${clusterNote})`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
