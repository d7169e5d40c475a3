import test from 'ava';
import knexFactory from 'knex';
import { knexConfig } from '../../lib/db';
import { insertRows, insertWithIds } from '../../lib/insert-rows';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { countQueries } from '../helpers/queries';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test('insertWithIds returns the ids of a multi-row INSERT in row order (as the database assigned them)', async (t) => {
  const rows = ['b-cat', 'a-cat', 'c-cat'].map((name) => ({
    name,
    name_key: `${name}-${Date.now()}`,
    parent_key: 0,
    parent_id: null,
    display_order: 0,
    created_at: new Date(),
  }));
  await app.db('categories').insert({ ...rows[0], name_key: `before-${Date.now()}` }); // ids do not start at 1
  const ids = await app.db.transaction((trx) => insertWithIds(trx, 'categories', rows));
  t.truthy(ids, 'MariaDB (autoinc lock mode 1) and SQLite both promise consecutive ids');
  const stored = await app.db('categories').whereIn('id', ids!).select('id', 'name_key');
  t.deepEqual(
    ids!.map((id) => stored.find((row: { id: number }) => row.id === id)?.name_key),
    rows.map((row) => row.name_key),
  );
});

test.serial(
  'insertWithIds over several statements (SQLite: 4 + 2 + 1 rows) returns every id in row order',
  async (t) => {
    const key = `chunks-${Date.now()}`;
    const rows = [6, 0, 5, 1, 4, 2, 3].map((n) => ({
      name: `c${n}`,
      name_key: `${key}-${n}`,
      parent_key: 0,
      parent_id: null,
      display_order: n,
      created_at: new Date(),
    }));
    const { result: ids, count } = await countQueries(
      app.db,
      (query) => /^insert into [`"]categories[`"]/i.test(query.sql),
      () => app.db.transaction((trx) => insertWithIds(trx, 'categories', rows)),
    );
    t.is(count, DB_KIND === 'mysql' ? 1 : 3);
    t.is(ids!.length, 7);
    const stored = await app.db('categories').whereIn('id', ids!).select('id', 'name_key');
    t.deepEqual(
      ids!.map((id) => stored.find((row: { id: number }) => row.id === id)?.name_key),
      rows.map((row) => row.name_key),
    );
  },
);

// Galera sets auto_increment_increment to the cluster's size: a multi-row INSERT's ids are then `step` apart.
(DB_KIND === 'mysql' ? test : test.skip)(
  'insertWithIds returns the right ids when the server hands them out in steps (auto_increment_increment 3)',
  async (t) => {
    const db = knexFactory({
      ...knexConfig(app.config.database),
      pool: {
        min: 1,
        max: 1,
        afterCreate(
          conn: { query(sql: string, done: (err: Error | null) => void): void },
          done: (err: Error | null, conn: unknown) => void,
        ) {
          conn.query('SET SESSION auto_increment_increment = 3', (err) => done(err, conn));
        },
      },
    });
    try {
      const key = `step-${Date.now()}`;
      const rows = [2, 0, 1].map((n) => ({
        name: `s${n}`,
        name_key: `${key}-${n}`,
        parent_key: 0,
        parent_id: null,
        display_order: n,
        created_at: new Date(),
      }));
      const ids = await db.transaction((trx) => insertWithIds(trx, 'categories', rows));
      t.is(ids![1] - ids![0], 3);
      const stored = await app.db('categories').whereIn('id', ids!).select('id', 'name_key');
      t.deepEqual(
        ids!.map((id) => stored.find((row: { id: number }) => row.id === id)?.name_key),
        rows.map((row) => row.name_key),
      );
    } finally {
      await db.destroy();
    }
  },
);

test('insertRows writes every row with its values (null and dates too), whatever columns a statement names', async (t) => {
  const at = new Date('2026-11-24T06:00:00.000Z');
  const key = `rows-${Date.now()}`;
  await app.db.transaction(async (trx) => {
    await insertRows(trx, 'categories', [
      { name: 'x', name_key: `${key}-1`, parent_key: 0, parent_id: null, display_order: 3, created_at: at },
      { name: 'y', name_key: `${key}-2`, parent_key: 0, parent_id: null, display_order: 4, created_at: at },
    ]);
    // The same table with other columns (and another order): its own statement, not the cached one.
    await insertRows(trx, 'categories', [
      { created_at: at, display_order: 5, name_key: `${key}-3`, name: 'z', parent_key: 0 },
    ]);
    await insertRows(trx, 'categories', []);
  });
  const stored = (await app
    .db('categories')
    .where('name_key', 'like', `${key}-%`)
    .orderBy('name_key')
    .select('name', 'display_order', 'parent_id', 'created_at')) as Array<{
    name: string;
    display_order: number;
    parent_id: number | null;
    created_at: Date | string | number;
  }>;
  t.deepEqual(
    stored.map((row) => [row.name, Number(row.display_order), row.parent_id]),
    [
      ['x', 3, null],
      ['y', 4, null],
      ['z', 5, null],
    ],
  );
  for (const row of stored) t.is(new Date(row.created_at).getTime(), at.getTime());
});

test('insertRows refuses rows whose columns differ from the first row, or an undefined value', async (t) => {
  const row = {
    name: 'x',
    name_key: `bad-${Date.now()}`,
    parent_key: 0,
    display_order: 0,
    created_at: new Date(),
  };
  await t.throwsAsync(insertRows(app.db, 'categories', [row, { ...row, parent_id: null }]), {
    message: /rows differ/,
  });
  await t.throwsAsync(insertRows(app.db, 'categories', [{ ...row, parent_id: undefined }]), {
    message: /parent_id is undefined/,
  });
  t.is((await app.db('categories').where('name_key', row.name_key)).length, 0);
});

test("values are written exactly whatever they hold (quotes, backslashes, '?', emoji, a date's milliseconds)", async (t) => {
  const at = new Date('2026-11-25T11:00:00.123Z');
  const key = `exact-${Date.now()}`;
  const names = [`it's "a" \\ test ? ?? \`x\``, 'line\nbreak\t% _ 😀 한글', "'); drop table categories; --"];
  await app.db.transaction((trx) =>
    insertRows(
      trx,
      'categories',
      names.map((name, index) => ({
        name,
        name_key: `${key}-${index}`,
        parent_key: 0,
        parent_id: null,
        display_order: index,
        created_at: at,
      })),
    ),
  );
  const stored = (await app
    .db('categories')
    .where('name_key', 'like', `${key}-%`)
    .orderBy('name_key')
    .select('name', 'created_at')) as Array<{ name: string; created_at: Date | string | number }>;
  t.deepEqual(
    stored.map((row) => row.name),
    names,
  );
  for (const row of stored) t.is(new Date(row.created_at).getTime(), at.getTime());
});

test('a failing statement names its placeholders, never the values it carried', async (t) => {
  const secret = `value-not-for-logs-${Date.now()}`;
  // A parent that does not exist: the database's own message names the constraint, not the row's values.
  const row = {
    name: secret,
    name_key: secret,
    parent_key: 0,
    parent_id: 2_000_000_000,
    created_at: new Date(),
  };
  // `any`: better-sqlite3's errors are not this realm's Error.
  const err = (await t.throwsAsync(insertRows(app.db, 'categories', [row]), { any: true })) as Error & {
    sql?: string;
  };
  t.regex(
    err.message,
    /^insert into [`"]categories[`"] \(.*\) values \(\?, \?, \?, \?, \?\) - .*foreign key/i,
  );
  t.false(err.message.includes(secret), err.message);
  t.false(String(err.sql ?? '').includes(secret));
});
