// Who is migrating, as the database server knows it. knex's migration lock is a row: a migrator that dies
// leaves it set, and nothing tells that row from one a live migrator holds. So on MySQL/MariaDB each run of
// the migrator also holds a named server lock (GET_LOCK) on a connection of its own; the server drops it the
// moment that connection ends, however the process ended. `npm run db:unlock` clears knex's lock only while
// no one holds the mark. SQLite has no such lock: there the unlock stays the operator's call.
import knex, { type Knex } from 'knex';
import { dialect, type Db } from './db';

/**
 * One name per database on the server. The database's name is hashed: a lock name has at most 64 characters,
 * and a database name alone may have 64.
 */
export const MARK = "CONCAT('marketplace.migrating.', SHA1(DATABASE()))";

/** Another migrator holds the mark: named as knex names its own refusal, so the start's wait loop waits for it. */
export class MigratorRunning extends Error {
  constructor() {
    super('Another migrator is running (it holds the migration mark)');
    this.name = 'MigrationLocked';
  }
}

/**
 * Runs `work` (the migrator) holding the mark, taken without waiting. Held by another: MigratorRunning, and
 * `work` does not run, so no migrator ever runs without it (db:unlock relies on that).
 */
export async function whileMigrating<T>(db: Db, work: () => Promise<T>): Promise<T> {
  if (!dialect.isMysql(db)) return work();
  // A pool of its own: the migrator's pool may have one connection (DB_POOL_MAX=1), and it needs that one. One
  // connection kept (min 1: never reaped as idle, however long the migration takes), so the lock stays held.
  const holder = knex({ ...(db.client.config as Knex.Config), pool: { min: 1, max: 1 } });
  try {
    const [row] = (await holder.select(holder.raw(`GET_LOCK(${MARK}, 0) AS taken`))) as Array<{
      taken: number | null;
    }>;
    if (Number(row?.taken) !== 1) throw new MigratorRunning();
    try {
      return await work();
    } finally {
      // A connection already gone has released it.
      await holder.select(holder.raw(`RELEASE_LOCK(${MARK}) AS released`)).catch(() => undefined);
    }
  } finally {
    await holder.destroy();
  }
}

/** Applies the pending migrations holding the mark: [batch, names applied]. The only way this project migrates. */
export function migrateLatest(db: Db): Promise<[number, string[]]> {
  return whileMigrating(db, () => db.migrate.latest());
}

/** Undoes the last batch (or every batch) holding the mark: [batch, names reverted]. */
export function rollback(db: Db, all = false): Promise<[number, string[]]> {
  return whileMigrating(db, () => db.migrate.rollback(undefined, all));
}

/** MySQL/MariaDB: the server's connection id of a live migrator, or null when none runs. Null on SQLite. */
export async function liveMigrator(db: Db): Promise<number | null> {
  if (!dialect.isMysql(db)) return null;
  const [row] = (await db.select(db.raw(`IS_USED_LOCK(${MARK}) AS holder`))) as Array<{
    holder: number | null;
  }>;
  return row?.holder == null ? null : Number(row.holder);
}
