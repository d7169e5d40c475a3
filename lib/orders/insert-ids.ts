// The orders' multi-row INSERTs, built without knex's query builder, and the ids of their rows without
// reading them back where the database promises they are consecutive: SQLite (one writer; it reports the
// LAST rowid) and MySQL/MariaDB with innodb_autoinc_lock_mode 0 or 1 (MariaDB's default; mysql2 reports
// the FIRST id). With mode 2 ("interleaved", MySQL 8's default) the caller reads them back instead. Saves
// two round trips per group commit. Linked INSERTs (`insertLinked`: rows that name the ids of an earlier
// INSERT's rows) travel to MySQL/MariaDB as ONE multi-statement packet, the ids taken in SQL
// (`LAST_INSERT_ID()`): one round trip instead of one per table. Part of the orders repository
// (order-repository.ts is its only user).
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

const quote = (identifier: string) => `\`${identifier.replaceAll('`', '``')}\``;

/**
 * A value known only once an earlier INSERT of the same `insertLinked` call ran: the id its `row`-th row got,
 * alone (a number) or inside text (`before` + id + `after`, e.g. a JSON payload that names the id).
 */
export class InsertedId {
  constructor(
    readonly insert: number,
    readonly row: number,
    readonly before?: string,
    readonly after?: string,
  ) {}

  /** The same id inside text: `before` + id + `after`. */
  within(before: string, after: string): InsertedId {
    return new InsertedId(this.insert, this.row, before, after);
  }

  /** The value, once the ids of the insert it names are known. */
  resolve(ids: number[][]): string | number {
    const id = ids[this.insert]?.[this.row];
    if (id === undefined) throw new Error(`insert ${this.insert}'s ids are unknown (no readBack)`);
    return this.before === undefined ? id : `${this.before}${id}${this.after ?? ''}`;
  }
}

interface Statement {
  head: string;
  row: string;
}
// One entry per table and column list the orders area inserts (a handful, fixed by the code).
const statements = new Map<string, Statement>();

/**
 * `insert into `table` (`a`, `b`) values (?, ?), (?, ?)` and its bindings, the statement knex's builder
 * would produce (it took ~55 us to compile a 32-row batch of orders; this takes a few). Every row must have
 * the first row's columns; a value may be null, never undefined (as knex requires of bindings).
 */
function insertStatement(table: string, rows: Record<string, unknown>[]): [string, Knex.Value[]] {
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
      const value = row[column];
      if (value === undefined) throw new Error(`insert into ${table}: ${column} is undefined`);
      bindings.push(value as Knex.Value);
    }
    if (Object.keys(row).length !== columns.length) throw new Error(`insert into ${table}: rows differ`);
  }
  return [statement.head + new Array<string>(rows.length).fill(statement.row).join(', '), bindings];
}

/** Inserts `rows` (all with the same columns) and returns their ids in row order, or null when they must be read back. */
async function insertWithIds(
  db: Knex,
  table: string,
  rows: Record<string, unknown>[],
): Promise<number[] | null> {
  const known = await consecutive(db);
  const ids: number[] = [];
  let start = 0;
  for (const size of dialect.statementSizes(db, rows.length)) {
    const [sql, bindings] = insertStatement(table, rows.slice(start, (start += size)));
    const result: unknown = await db.raw(sql, bindings);
    if (!known) continue;
    const first = dialect.firstInsertedId(db, dialect.rawWriteResult(db, result).insertId, size);
    for (let index = 0; index < size; index++) ids.push(first + index);
  }
  return known ? ids : null;
}

/** One INSERT of an `insertLinked` call. */
export interface LinkedInsert {
  table: string;
  /** All with the same columns; a value may be an `InsertedId` of an EARLIER insert of the call. */
  rows: Record<string, unknown>[];
  /**
   * The rows' ids in row order, read back when the database does not promise consecutive ids (MySQL's
   * innodb_autoinc_lock_mode 2); needed only when a later insert names them or the caller wants them.
   */
  readBack?: (db: Knex, earlier: number[][]) => Promise<number[]>;
}

interface InsertHeader {
  insertId: number | string;
}

const idVariable = (insert: number) => `@inserted_${insert}`;

/** A row of the packet: `(?, (@inserted_0 + 3), concat(?, (@inserted_0 + 3), ?))`, its bindings pushed. */
function linkedRow(columns: string[], row: Record<string, unknown>, bindings: Knex.Value[]): string {
  const values = columns.map((column) => {
    const value = row[column];
    if (value === undefined) throw new Error(`insert: ${column} is undefined`);
    if (!(value instanceof InsertedId)) {
      bindings.push(value as Knex.Value);
      return '?';
    }
    const id = `(${idVariable(value.insert)} + ${value.row})`;
    if (value.before === undefined) return id;
    bindings.push(value.before, value.after ?? '');
    return `concat(?, ${id}, ?)`;
  });
  if (Object.keys(row).length !== columns.length) throw new Error('insert: rows differ');
  return `(${values.join(', ')})`;
}

/**
 * Runs `inserts` in order (inside the caller's transaction) and returns each one's ids in row order. On
 * MySQL/MariaDB with consecutive ids: one multi-statement packet, each insert's first id kept in a session
 * variable for the later ones. Otherwise statement by statement, the `InsertedId`s resolved in between
 * (SQLite has no round trips to save).
 */
export async function insertLinked(db: Knex, inserts: LinkedInsert[]): Promise<number[][]> {
  const toWrite = inserts.filter((insert) => insert.rows.length > 0);
  if (toWrite.length !== inserts.length) {
    // An empty insert has no ids; the others keep their positions.
    const written = await insertLinked(db, toWrite);
    return inserts.map((insert) => (insert.rows.length > 0 ? written[toWrite.indexOf(insert)] : []));
  }
  if (dialect.isMysql(db) && (await consecutive(db))) {
    const parts: string[] = [];
    const bindings: Knex.Value[] = [];
    const statementOf: number[] = [];
    inserts.forEach(({ table, rows }, index) => {
      const columns = Object.keys(rows[0]);
      statementOf.push(parts.length);
      parts.push(
        `insert into ${quote(table)} (${columns.map(quote).join(', ')}) values ` +
          rows.map((row) => linkedRow(columns, row, bindings)).join(', '),
      );
      if (index < inserts.length - 1) parts.push(`set ${idVariable(index)} = last_insert_id()`);
    });
    const [answer] = (await db.raw(parts.join(';\n'), bindings)) as [InsertHeader | InsertHeader[]];
    // mysql2 answers one statement with its header, several with one header each.
    const results = Array.isArray(answer) ? answer : [answer];
    return inserts.map(({ rows }, index) => {
      const first = Number(results[statementOf[index]].insertId);
      return rows.map((_, row) => first + row);
    });
  }
  const ids: number[][] = [];
  for (const { table, rows, readBack } of inserts) {
    const resolved = rows.map((row) => {
      const copy: Record<string, unknown> = {};
      for (const [column, value] of Object.entries(row))
        copy[column] = value instanceof InsertedId ? value.resolve(ids) : value;
      return copy;
    });
    const known = await insertWithIds(db, table, resolved);
    ids.push(known ?? (readBack ? await readBack(db, ids) : []));
  }
  return ids;
}
