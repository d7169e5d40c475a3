// A SQLite connection takes planner statistics when it opens (lib/db.ts: PRAGMA optimize = 0x10002), so the
// plain product list walks products_created_index and stops after its page instead of sorting every visible
// row in a temp B-tree (what SQLite planned without statistics; bench/README.md, catalog on SQLite). SQLite is
// embedded, so this runs in both passes of the suite.
import test from 'ava';
import { loadConfig } from '../../lib/config';
import { createDb, type Db } from '../../lib/db';
import { applyCursor, applyFilters, applySort, parseSort } from '../../lib/products/product-repository';
import { seedDemo } from '../../seeds/01_demo';
import { seedCatalog } from '../../scripts/seed-demo';
import { createTestDatabase, type TestDatabase } from '../helpers/harness';

let database: TestDatabase;
const configOf = (dataDir: string) =>
  loadConfig({ NODE_ENV: 'test', DATA_DIR: dataDir, BCRYPT_COST: '4' } as Record<string, string>);

test.before(async () => {
  database = await createTestDatabase('sqlite');
  const config = configOf(database.dataDir);
  const db = createDb(config.database);
  try {
    await db.migrate.latest();
    await seedDemo(db, config);
    await seedCatalog(db, {
      products: 3000,
      sellers: 2,
      batch: 500,
      seed: 1,
      sellerPassword: config.seedPasswords.seller,
      bcryptCost: 4,
    });
  } finally {
    await db.destroy();
  }
});
test.after.always(async () => {
  await database?.drop();
});

async function plan(db: Db, sort: string): Promise<string[]> {
  const { sql, bindings } = applySort(applyFilters(db, db('products').select('*'), null, {}), parseSort(sort))
    .limit(20)
    .toSQL();
  const rows = (await db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as never)) as Array<{ detail: string }>;
  return rows.map((row) => row.detail);
}

test('a new SQLite connection has statistics for products, and the plain lists walk their sort index', async (t) => {
  const db = createDb(configOf(database.dataDir).database);
  try {
    const stats = (await db.raw("SELECT tbl FROM sqlite_stat1 WHERE tbl = 'products'")) as unknown[];
    t.true(stats.length > 0);
    t.deepEqual(await plan(db, 'createdAt,desc'), ['SCAN products USING INDEX products_created_index']);
    t.deepEqual(await plan(db, 'salesCount,desc'), ['SCAN products USING INDEX products_sales_index']);
    const page = await applySort(
      applyFilters(db, db('products').select('id'), null, {}),
      parseSort('createdAt,desc'),
    ).limit(20);
    t.is(page.length, 20);
  } finally {
    await db.destroy();
  }
});

test('a deep cursor page walks the createdAt index from the cursor: no temp B-tree sort of the rows after it', async (t) => {
  const db = createDb(configOf(database.dataDir).database);
  try {
    // The 2,500th newest visible product of ~3,000: a deep page.
    const [at] = (await db('products')
      .whereIn('status', ['ON_SALE', 'SOLD_OUT'])
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .offset(2_500)
      .limit(1)
      .select('created_at', 'id')) as Array<{ created_at: Date; id: number }>;
    const query = applySort(
      applyCursor(applyFilters(db, db('products').select('*'), null, {}), {
        createdAt: new Date(at.created_at),
        id: Number(at.id),
      }),
      parseSort('createdAt,desc'),
    )
      .limit(21)
      .toSQL();
    const rows = (await db.raw(`EXPLAIN QUERY PLAN ${query.sql}`, query.bindings as never)) as Array<{
      detail: string;
    }>;
    const details = rows.map((row) => row.detail);
    // Before: MULTI-INDEX OR over products_status_created_index, then USE TEMP B-TREE FOR ORDER BY.
    t.false(
      details.some((d) => /TEMP B-TREE|MULTI-INDEX OR/.test(d)),
      details.join(' | '),
    );
    t.true(
      details.some((d) =>
        /^SEARCH products USING (COVERING )?INDEX products_created\w* \(created_at<\?\)$/.test(d),
      ),
      details.join(' | '),
    );
  } finally {
    await db.destroy();
  }
});
