// Ids of the rows of one multi-row INSERT without reading them back, where the database promises they
// are consecutive: SQLite (one writer; knex reports the LAST rowid) and MySQL/MariaDB with
// innodb_autoinc_lock_mode 0 or 1 (MariaDB's default; mysql2 reports the FIRST id). With mode 2
// ("interleaved", MySQL 8's default) the caller reads them back instead. Saves two round trips per
// group commit. Part of the orders repository (order-repository.ts is its only user).
import type { Knex } from 'knex';
import { dialect } from '../db';

const decided = new WeakMap<object, Promise<boolean>>();

async function consecutive(db: Knex): Promise<boolean> {
  if (!dialect.isMysql(db)) return true;
  const key = (db.client as { config: object }).config;
  let answer = decided.get(key);
  if (!answer) {
    answer = db
      .raw('SELECT @@innodb_autoinc_lock_mode AS mode')
      .then(([rows]: [Array<{ mode: number | string }>]) => Number(rows[0]?.mode) <= 1);
    decided.set(key, answer);
  }
  return answer;
}

/** Inserts `rows` and returns their ids in row order, or null when they must be read back. */
export async function insertWithIds(
  db: Knex,
  table: string,
  rows: Record<string, unknown>[],
): Promise<number[] | null> {
  const known = await consecutive(db);
  const result = (await db(table).insert(rows)) as Array<number | string>;
  if (!known) return null;
  const first = dialect.firstInsertedId(db, Number(result[0]), rows.length);
  return rows.map((_, index) => first + index);
}
