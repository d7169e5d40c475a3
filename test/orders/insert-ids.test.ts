import test from 'ava';
import { InsertedId, insertLinked } from '../../lib/orders/insert-ids';
import { isUniqueViolation } from '../../lib/db';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { countQueries } from '../helpers/queries';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test('insertLinked returns the ids of a multi-row INSERT in row order (as the database assigned them)', async (t) => {
  const rows = ['b-cat', 'a-cat', 'c-cat'].map((name) => ({
    name,
    name_key: `${name}-${Date.now()}`,
    parent_key: 0,
    parent_id: null,
    display_order: 0,
    created_at: new Date(),
  }));
  await app.db('categories').insert({ ...rows[0], name_key: `before-${Date.now()}` }); // ids do not start at 1
  const [ids] = await app.db.transaction((trx) => insertLinked(trx, [{ table: 'categories', rows }]));
  t.is(ids.length, 3, 'MariaDB (autoinc lock mode 1) and SQLite both promise consecutive ids');
  const stored = await app.db('categories').whereIn('id', ids).select('id', 'name_key');
  t.deepEqual(
    ids.map((id) => stored.find((row: { id: number }) => row.id === id)?.name_key),
    rows.map((row) => row.name_key),
  );
});

test.serial(
  'insertLinked over several statements (SQLite: 4 + 2 + 1 rows) returns every id in row order',
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
    const {
      result: [ids],
      count,
    } = await countQueries(
      app.db,
      (query) => /^insert into [`"]categories[`"]/i.test(query.sql),
      () => app.db.transaction((trx) => insertLinked(trx, [{ table: 'categories', rows }])),
    );
    t.is(count, DB_KIND === 'mysql' ? 1 : 3);
    t.is(ids.length, 7);
    const stored = await app.db('categories').whereIn('id', ids).select('id', 'name_key');
    t.deepEqual(
      ids.map((id) => stored.find((row: { id: number }) => row.id === id)?.name_key),
      rows.map((row) => row.name_key),
    );
  },
);

test('insertLinked writes every row with its values (null and dates too), whatever columns a statement names', async (t) => {
  const at = new Date('2026-11-24T06:00:00.000Z');
  const key = `rows-${Date.now()}`;
  await app.db.transaction(async (trx) => {
    await insertLinked(trx, [
      {
        table: 'categories',
        rows: [
          {
            name: 'x',
            name_key: `${key}-1`,
            parent_key: 0,
            parent_id: null,
            display_order: 3,
            created_at: at,
          },
          {
            name: 'y',
            name_key: `${key}-2`,
            parent_key: 0,
            parent_id: null,
            display_order: 4,
            created_at: at,
          },
        ],
      },
    ]);
    // The same table with other columns (and another order): its own statement, not the cached one.
    await insertLinked(trx, [
      {
        table: 'categories',
        rows: [{ created_at: at, display_order: 5, name_key: `${key}-3`, name: 'z', parent_key: 0 }],
      },
      { table: 'categories', rows: [] },
    ]);
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

test('insertLinked refuses rows whose columns differ from the first row, or an undefined value', async (t) => {
  const row = {
    name: 'x',
    name_key: `bad-${Date.now()}`,
    parent_key: 0,
    display_order: 0,
    created_at: new Date(),
  };
  await t.throwsAsync(
    insertLinked(app.db, [{ table: 'categories', rows: [row, { ...row, parent_id: null }] }]),
    {
      message: /rows differ/,
    },
  );
  await t.throwsAsync(
    insertLinked(app.db, [{ table: 'categories', rows: [{ ...row, parent_id: undefined }] }]),
    {
      message: /parent_id is undefined/,
    },
  );
  t.is((await app.db('categories').where('name_key', row.name_key)).length, 0);
});

test('insertLinked writes rows that name the ids of an earlier insert (alone or inside text); one packet on MariaDB', async (t) => {
  const key = `linked-${Date.now()}`;
  const at = new Date('2026-11-24T22:00:00.000Z');
  const category = (name: string, parent: number | InsertedId | null, nameKey: string | InsertedId) => ({
    name,
    name_key: nameKey,
    parent_key: 0,
    parent_id: parent,
    display_order: 0,
    created_at: at,
  });
  const { result: ids, count } = await countQueries(
    app.db,
    (query) =>
      /insert into/i.test(query.sql) && (query.bindings ?? []).some((value) => String(value).startsWith(key)),
    () =>
      app.db.transaction((trx) =>
        insertLinked(trx, [
          {
            table: 'categories',
            rows: [category('p0', null, `${key}-p0`), category('p1', null, `${key}-p1`)],
          },
          { table: 'categories', rows: [] },
          {
            table: 'categories',
            rows: [
              category('c1', new InsertedId(0, 1), new InsertedId(0, 1).within(`${key}-child-of-`, '!')),
              category('c0', new InsertedId(0, 0), new InsertedId(0, 0).within(`${key}-child-of-`, '!')),
            ],
          },
        ]),
      ),
  );
  t.is(
    count,
    DB_KIND === 'mysql' ? 1 : 2,
    'MariaDB: one multi-statement packet; SQLite: one statement per insert',
  );
  t.is(ids.length, 3);
  t.deepEqual(ids[1], []);
  const stored = (await app
    .db('categories')
    .whereIn('id', [...ids[0], ...ids[2]])
    .select('id', 'name', 'name_key', 'parent_id')) as Array<{
    id: number;
    name: string;
    name_key: string;
    parent_id: number | null;
  }>;
  const byId = new Map(stored.map((row) => [Number(row.id), row]));
  t.deepEqual(
    ids[0].map((id) => byId.get(id)?.name),
    ['p0', 'p1'],
  );
  const [p0, p1] = ids[0];
  t.deepEqual(
    ids[2].map((id) => {
      const row = byId.get(id)!;
      return [row.name, Number(row.parent_id), row.name_key];
    }),
    [
      ['c1', p1, `${key}-child-of-${p1}!`],
      ['c0', p0, `${key}-child-of-${p0}!`],
    ],
  );
});

test('insertLinked writes nothing when one of its inserts fails (the caller rolls back), on either database', async (t) => {
  const key = `linked-fail-${Date.now()}`;
  const row = {
    name: 'x',
    name_key: key,
    parent_key: 0,
    parent_id: null,
    display_order: 0,
    created_at: new Date(),
  };
  const err = await t.throwsAsync(
    app.db.transaction((trx) =>
      insertLinked(trx, [
        { table: 'categories', rows: [row] },
        { table: 'categories', rows: [{ ...row, parent_id: new InsertedId(0, 0), name_key: `${key}-2` }] },
        // the first row's (parent_key, name_key) again: the unique index refuses it after two inserts ran
        { table: 'categories', rows: [{ ...row }] },
      ]),
    ),
    { any: true },
  );
  t.true(isUniqueViolation(err));
  t.is((await app.db('categories').where('name_key', 'like', `${key}%`)).length, 0);
});
