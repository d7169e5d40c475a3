// The group commit's multi-row INSERTs (orders, items, history, outbox), built without knex's query builder,
// and the ids of their rows without reading them back where the database promises they are consecutive:
// SQLite (one writer; it reports the LAST rowid) and MySQL/MariaDB with innodb_autoinc_lock_mode 0 or 1
// (MariaDB's default; mysql2 reports the FIRST id), there `auto_increment_increment` apart (a server set up
// for several writers sets it above 1). With mode 2 ("interleaved", MySQL 8's default, and Galera's
// requirement) the caller reads them back instead. Saves two round trips per group commit. Used by the
// repositories that write in a batch's transaction: the orders' (order-repository.ts) and the outbox's
// (notifications/outbox.ts).
import type { Knex } from 'knex';
import { dialect, runPrebuilt } from './db';

const decided = new WeakMap<object, Promise<number | null>>();

/**
 * The distance between the ids of one multi-row INSERT's rows, or null when they are not promised to be evenly
 * spaced. Asked once per pool: the server's settings, which every connection starts with (the service never
 * changes them per session).
 */
async function idStep(db: Knex): Promise<number | null> {
  if (!dialect.isMysql(db)) return 1;
  const key = (db.client as { config: object }).config;
  let answer = decided.get(key);
  if (!answer) {
    answer = db
      .raw('SELECT @@innodb_autoinc_lock_mode AS mode, @@auto_increment_increment AS step')
      .then(([rows]: [Array<{ mode: number | string; step: number | string }>]) =>
        Number(rows[0]?.mode) <= 1 ? Number(rows[0].step) : null,
      );
    decided.set(key, answer);
    // A failed read (a connection lost at it) is asked again by the next batch, not kept for every batch to come.
    answer.catch(() => {
      if (decided.get(key) === answer) decided.delete(key);
    });
  }
  return answer;
}

const quote = (identifier: string) => `\`${identifier.replaceAll('`', '``')}\``;

interface Statement {
  head: string;
  row: string;
}
// One entry per table and column list inserted here (a handful, fixed by the code).
const statements = new Map<string, Statement>();

/** A row to insert: column name to value (a row type with named fields, e.g. OutboxRow, is one). */
type Row = object;

/**
 * `insert into `table` (`a`, `b`) values (?, ?), (?, ?)` and its bindings, the statement knex's builder
 * would produce (it took ~55 us to compile a 32-row batch of orders; this takes a few). Every row must have
 * the first row's columns; a value may be null, never undefined (as knex requires of bindings).
 */
function insertStatement(table: string, rows: Row[]): [string, Knex.Value[]] {
  const columns = Object.keys(rows[0]);
  const key = `${table}\u0000${columns.join('\u0000')}`;
  let statement = statements.get(key);
  if (!statement) {
    statement = {
      head: `insert into ${quote(table)} (${columns.map(quote).join(', ')}) values `,
      row: `(${columns.map(() => '?').join(', ')})`,
    };
    statements.set(key, statement);
  }
  const bindings: Knex.Value[] = [];
  for (const row of rows) {
    for (const column of columns) {
      const value = (row as Record<string, unknown>)[column];
      if (value === undefined) throw new Error(`insert into ${table}: ${column} is undefined`);
      bindings.push(value as Knex.Value);
    }
    if (Object.keys(row).length !== columns.length) throw new Error(`insert into ${table}: rows differ`);
  }
  return [statement.head + new Array<string>(rows.length).fill(statement.row).join(', '), bindings];
}

/** Inserts `rows` (all with the same columns): one statement (MySQL), a few of repeating sizes (SQLite). */
export async function insertRows(db: Knex, table: string, rows: Row[]): Promise<void> {
  let start = 0;
  for (const size of dialect.statementSizes(db, rows.length)) {
    const [sql, bindings] = insertStatement(table, rows.slice(start, (start += size)));
    await runPrebuilt(db, sql, bindings);
  }
}

/**
 * Inserts `rows` (all with the same columns) and returns their ids in row order, or null when they must be read
 * back.
 */
export async function insertWithIds(db: Knex, table: string, rows: Row[]): Promise<number[] | null> {
  const step = await idStep(db);
  const ids: number[] = [];
  let start = 0;
  for (const size of dialect.statementSizes(db, rows.length)) {
    const [sql, bindings] = insertStatement(table, rows.slice(start, (start += size)));
    const result: unknown = await runPrebuilt(db, sql, bindings);
    if (step === null) continue;
    const first = dialect.firstInsertedId(db, dialect.rawWriteResult(db, result).insertId, size);
    for (let index = 0; index < size; index++) ids.push(first + index * step);
  }
  return step === null ? null : ids;
}
