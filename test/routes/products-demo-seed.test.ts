// The demo catalogue (scripts/seed-demo.ts) on the database under test: the rows it writes are valid
// products the API serves, with createdAt ties, and the cursor list walks them without gap or repeat; the script
// refuses a production database.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { createDb } from '../../lib/db';
import { createTestDatabase, startTestApp, testConfig, type TestApp } from '../helpers/harness';
import { seedDemo } from '../../seeds/01_demo';
import { progressBar, seedCatalog } from '../../scripts/seed-demo';

let app: TestApp;
const progress: Array<[number, number]> = [];
test.before(async () => {
  app = await startTestApp();
  await seedDemo(app.db, app.config);
  await seedCatalog(app.db, {
    products: 1234,
    sellers: 3,
    batch: 1000,
    seed: 7,
    sellerPassword: 'Seller-pass-1',
    bcryptCost: 4,
    onProgress: (done, total) => progress.push([done, total]),
  });
});
test.after.always(async () => {
  await app?.close();
});

test('inserts exactly the asked number in batches, reporting progress up to the total', async (t) => {
  const rows = await app.db('products').where('name', 'not like', 'Demo %').count({ n: '*' }).first();
  t.is(Number(rows?.n), 1234);
  t.deepEqual(progress[progress.length - 1], [1234, 1234]);
  t.true(progress.length >= 2, 'more than one INSERT');
  t.true(progress.every(([done], i) => i === 0 || done > progress[i - 1][0]));
  t.is(
    Number(
      (
        await app
          .db('members')
          .where('email', 'like', 'demo-seller-%')
          .where('role', 'SELLER')
          .count({ n: '*' })
          .first()
      )?.n,
    ),
    3,
  );
});

test('realistic rows: every status, SOLD_OUT has no stock, prices with 2 decimals, createdAt ties', async (t) => {
  const rows = await app
    .db('products')
    .where('name', 'not like', 'Demo %')
    .select('status', 'stock_quantity', 'price', 'created_at');
  const statuses = new Set(rows.map((r) => r.status));
  t.deepEqual([...statuses].sort(), ['DELETED', 'DRAFT', 'ON_SALE', 'SOLD_OUT']);
  t.true(rows.filter((r) => r.status === 'SOLD_OUT').every((r) => Number(r.stock_quantity) === 0));
  t.true(rows.filter((r) => r.status === 'ON_SALE').every((r) => Number(r.stock_quantity) > 0));
  t.true(rows.every((r) => /^\d+(\.\d{1,2})?$/.test(String(r.price)) && Number(r.price) > 0));
  const stamps = rows.map((r) => new Date(r.created_at).getTime());
  t.true(new Set(stamps).size < stamps.length, 'some products share a createdAt');
});

test('the API serves the demo catalogue: cursor walk equals the offset list, no gap, no repeat', async (t) => {
  const viaCursor: number[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: { content: Array<{ id: number }>; nextCursor: string | null } } =
      await app.request('GET', `/api/v1/products/cursor?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    t.is(res.status, 200);
    viaCursor.push(...res.body.content.map((p) => p.id));
    cursor = res.body.nextCursor;
  } while (cursor);
  const viaPages: number[] = [];
  for (let page = 0; ; page++) {
    const res = await app.request('GET', `/api/v1/products?size=100&page=${page}`);
    viaPages.push(...res.body.content.map((p: { id: number }) => p.id));
    if (!res.body.hasNext) break;
  }
  t.deepEqual(viaCursor, viaPages);
  t.is(new Set(viaCursor).size, viaCursor.length);
  const visible = await app
    .db('products')
    .whereIn('status', ['ON_SALE', 'SOLD_OUT'])
    .count({ n: '*' })
    .first();
  t.is(viaCursor.length, Number(visible?.n));
});

test('a demo seller address held by a buyer is refused before anything is written', async (t) => {
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    body: {
      email: 'demo-seller-9@marketplace.test',
      password: 'Buyer-pass-1',
      name: 'Not a seller',
      phone: '010-1234-5678',
      role: 'BUYER',
    },
  });
  t.is(signup.status, 201, signup.text);
  const count = async () => Number((await app.db('products').count({ n: '*' }).first())?.n);
  const before = await count();
  const sellers = () => app.db('members').where('email', 'like', 'demo-seller-%').count({ n: '*' }).first();
  const sellersBefore = Number((await sellers())?.n);
  const err = await t.throwsAsync(
    seedCatalog(app.db, {
      products: 50,
      sellers: 10,
      batch: 10,
      seed: 3,
      sellerPassword: 'Seller-pass-1',
      bcryptCost: 4,
    }),
  );
  t.is(
    err?.message,
    'The demo seller address demo-seller-9@marketplace.test belongs to a BUYER account: no products were added',
  );
  t.is(await count(), before);
  t.is(Number((await sellers())?.n), sellersBefore, 'no demo seller was created either');
});

test('npm run seed:demo with a demo seller address held by a buyer: exit 1 before the base seed, nothing written', async (t) => {
  const database = await createTestDatabase();
  const db = createDb(testConfig(database.env).database);
  try {
    await db.migrate.latest();
    const at = new Date();
    await db('members').insert({
      email: 'demo-seller-2@marketplace.test',
      password_hash: 'x',
      name: 'Not a seller',
      phone: '010-1234-5678',
      role: 'BUYER',
      created_at: at,
      updated_at: at,
    });
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'scripts/seed-demo.ts', '--products', '10', '--sellers', '3'],
        {
          cwd: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'),
          env: { ...process.env, ...database.env, NODE_ENV: 'development' },
        },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
      );
    });
    t.is(result.code, 1, result.output);
    t.regex(
      result.output,
      /The demo seller address demo-seller-2@marketplace\.test belongs to a BUYER account: no products were added/,
    );
    t.is(Number((await db('products').count({ n: '*' }).first())?.n), 0, 'not even the base seed ran');
    t.is(Number((await db('members').count({ n: '*' }).first())?.n), 1);
  } finally {
    await db.destroy();
    await database.drop();
  }
});

test('the progress bar prints one line per 10% when stderr is not a terminal', (t) => {
  const out: string[] = [];
  const bar = progressBar('rows', {
    isTTY: false,
    write: (s: string) => out.push(s),
  } as unknown as NodeJS.WriteStream);
  for (let done = 100; done <= 1000; done += 100) bar(done, 1000);
  t.is(out.length, 10);
  t.regex(out[9], /^rows \[#{30}\] 100% {2}1000\/1000 {2}\d+ rows\/s\n$/);
  t.regex(out[4], /^rows \[#{15}\.{15}\] {2}50% {2}500\/1000/);
});

test('npm run seed:demo refuses NODE_ENV=production: exit 1, nothing written', async (t) => {
  const database = await createTestDatabase();
  try {
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'scripts/seed-demo.ts', '--products', '10'],
        {
          cwd: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'),
          env: {
            ...process.env,
            ...database.env,
            NODE_ENV: 'production',
            JWT_SECRET: 'x'.repeat(40),
            SEED_ADMIN_PASSWORD: 'Prod-admin-1!',
            SEED_SELLER_PASSWORD: 'Prod-seller-1!',
            SEED_BUYER_PASSWORD: 'Prod-buyer-1!',
          },
        },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
      );
    });
    t.is(result.code, 1, result.output);
    t.regex(result.output, /Refusing to add a demo catalogue with NODE_ENV=production/);
    // Not even migrated: the refusal comes before the database is touched.
    const db = createDb(testConfig(database.env).database);
    try {
      t.false(await db.schema.hasTable('products'));
    } finally {
      await db.destroy();
    }
  } finally {
    await database.drop();
  }
});
