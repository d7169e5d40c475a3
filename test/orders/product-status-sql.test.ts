// The SQL form of "status follows stock" (lib/products/product-status-sql.ts) decides exactly as the pure
// rule (actors/product-status.ts), for every status and stock, evaluated by the database itself.
import test from 'ava';
import { PRODUCT_STATUSES, statusFollowingStock } from '../../actors/product-status';
import { sql, statusFollowingStockSql } from '../../lib/products/product-status-sql';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test('the database evaluates the generated CASE as the TypeScript rule decides', async (t) => {
  for (const status of PRODUCT_STATUSES) {
    for (const stock of [0, 1, 7]) {
      const part = statusFollowingStockSql(sql('?', status), sql('? + 0', stock));
      const result = await app.db.raw(`SELECT ${part.sql} AS status`, part.bindings);
      const rows = (Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result) as Array<{
        status: string;
      }>;
      t.is(rows[0].status, statusFollowingStock(status, stock), `${status} with stock ${stock}`);
    }
  }
});
