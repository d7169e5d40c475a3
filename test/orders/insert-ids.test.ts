import test from 'ava';
import { insertWithIds } from '../../lib/orders/insert-ids';
import { startTestApp, type TestApp } from '../helpers/harness';

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
