// The SQLite connection's kept prepared statements (lib/sqlite-statements.ts), on a real in-memory database,
// and the statement sizes that make the group commit's texts repeat (lib/db.ts, dialect.statementSizes).
import { createRequire } from 'node:module';
import test from 'ava';
import { dialect } from '../../lib/db';
import { cachePreparedStatements, statementCacheSize } from '../../lib/sqlite-statements';

interface Statement {
  run(...bindings: unknown[]): unknown;
  all(...bindings: unknown[]): unknown[];
}
interface SqliteDb {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  close(): void;
}
// better-sqlite3 ships no types (knex is its only user in lib/).
const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => SqliteDb;

function database(limits?: { maxEntries: number; maxChars: number }) {
  const db = new Database(':memory:');
  cachePreparedStatements(db, limits);
  db.exec('create table t (id integer primary key, n integer)');
  return db;
}

test('the same text gives the same statement, which runs again with other bindings', (t) => {
  const db = database();
  const insert = db.prepare('insert into t (id, n) values (?, ?)');
  t.is(db.prepare('insert into t (id, n) values (?, ?)'), insert);
  insert.run(1, 10);
  db.prepare('insert into t (id, n) values (?, ?)').run(2, 20);
  const select = db.prepare('select n from t where id = ?');
  t.deepEqual(select.all(1), [{ n: 10 }]);
  t.deepEqual(db.prepare('select n from t where id = ?').all(2), [{ n: 20 }]);
  t.deepEqual(statementCacheSize(db), {
    entries: 2,
    chars: 'insert into t (id, n) values (?, ?)'.length + 'select n from t where id = ?'.length,
  });
  db.close();
});

test('a kept statement sees a schema change made after it was prepared', (t) => {
  const db = database();
  db.prepare('insert into t (id, n) values (?, ?)').run(1, 10);
  const kept = db.prepare('select * from t');
  t.deepEqual(kept.all(), [{ id: 1, n: 10 }]);
  db.exec('alter table t add column m integer default 7');
  t.is(db.prepare('select * from t'), kept, 'the same statement, kept');
  t.deepEqual(db.prepare('select * from t').all(), [{ id: 1, n: 10, m: 7 }]);
  db.close();
});

test('bounded by entries and by length of SQL, least recently used dropped first; a longer text is not kept', (t) => {
  const db = database({ maxEntries: 2, maxChars: 60 });
  const a = db.prepare('select 1 as a');
  const b = db.prepare('select 2 as b');
  t.is(db.prepare('select 1 as a'), a, 'a is used again: b is now the oldest');
  db.prepare('select 3 as c');
  t.is(statementCacheSize(db)!.entries, 2);
  t.is(db.prepare('select 1 as a'), a, 'a kept');
  t.not(db.prepare('select 2 as b'), b, 'b dropped: prepared anew');
  const long = `select ${'1 + '.repeat(20)}1 as d`;
  t.not(db.prepare(long), db.prepare(long), 'longer than maxChars: never kept');
  t.true(statementCacheSize(db)!.chars <= 60);
  db.close();
});

test('statement sizes: one per max rows on MySQL, power-of-two sizes on SQLite', (t) => {
  const mysql = { client: { config: { client: 'mysql2' } } };
  const sqlite = { client: { config: { client: 'better-sqlite3' } } };
  t.deepEqual(dialect.statementSizes(mysql, 170), [170]);
  t.deepEqual(dialect.statementSizes(mysql, 1200, 500), [500, 500, 200]);
  t.deepEqual(dialect.statementSizes(mysql, 0), []);
  t.deepEqual(dialect.statementSizes(sqlite, 170), [128, 32, 8, 2]);
  t.deepEqual(dialect.statementSizes(sqlite, 7), [4, 2, 1]);
  t.deepEqual(dialect.statementSizes(sqlite, 600, 500), [256, 256, 64, 16, 8]);
  t.deepEqual(dialect.statementSizes(sqlite, 600, 100), [64, 64, 64, 64, 64, 64, 64, 64, 64, 16, 8]);
  t.deepEqual(dialect.statementSizes(sqlite, 0), []);
});
