// The same migrations run up, down and up again on the database under test, with the constraints the
// other areas rely on.
import test from 'ava';
import type { Knex } from 'knex';
import { createDb, isUniqueViolation } from '../../lib/db';
import { createCategory, createMember } from '../helpers/factories';
import { createTestDatabase, DB_KIND, startTestApp, testConfig, type TestDatabase } from '../helpers/harness';

const TABLES = [
  'members',
  'refresh_tokens',
  'categories',
  'products',
  'product_images',
  'orders',
  'order_items',
  'order_status_history',
  'idempotency_keys',
  'notification_outbox',
  'notifications',
];

/**
 * A seller and a category written straight into `db` (its schema may be a migration behind the service's), and the
 * row of an ON_SALE product of theirs named `name`.
 */
async function sellerAndCategory(db: Knex, tag: string, sellerName = 's') {
  const at = new Date();
  const [sellerId] = await db('members').insert({
    email: `${tag.toLowerCase()}-seller@example.test`,
    password_hash: 'x',
    name: sellerName,
    phone: 'p',
    role: 'SELLER',
    created_at: at,
    updated_at: at,
  });
  const [categoryId] = await db('categories').insert({
    name: tag,
    name_key: tag.toLowerCase(),
    created_at: at,
  });
  const product = (name: string) => ({
    seller_id: sellerId,
    category_id: categoryId,
    name,
    price: '1.00',
    stock_quantity: 1,
    status: 'ON_SALE',
    sales_count: 0,
    created_at: at,
    updated_at: at,
  });
  return { sellerId: Number(sellerId), product };
}

let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  await database?.drop();
});

test.serial('migrations run up, down and up again', async (t) => {
  const db = createDb(testConfig(database.env).database);
  try {
    const [, applied] = await db.migrate.latest();
    t.true(applied.length >= 4);
    for (const table of TABLES) t.true(await db.schema.hasTable(table), `${table} exists`);

    await db.migrate.rollback(undefined, true);
    for (const table of TABLES) t.false(await db.schema.hasTable(table), `${table} dropped`);

    await db.migrate.latest();
    for (const table of TABLES) t.true(await db.schema.hasTable(table), `${table} exists again`);
    const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
    t.is(pending.length, 0);
  } finally {
    await db.destroy();
  }
});

test.serial('unique constraints: member email, order number; times keep milliseconds', async (t) => {
  const db = createDb(testConfig(database.env).database);
  try {
    await db.migrate.latest();
    const at = new Date('2026-11-22T10:41:14.123Z');
    const member = {
      email: 'dup@example.test',
      password_hash: 'x',
      name: 'n',
      phone: 'p',
      role: 'BUYER',
      created_at: at,
      updated_at: at,
    };
    const [memberId] = await db('members').insert(member);
    const err = await t.throwsAsync(db('members').insert(member), { any: true });
    t.true(isUniqueViolation(err));

    const order = {
      order_number: 'ORD-1',
      buyer_id: memberId,
      status: 'PENDING',
      total_amount: '10.50',
      zip_code: '1',
      address: 'a',
      address_detail: 'b',
      receiver_name: 'r',
      receiver_phone: 'p',
      ordered_at: at,
      updated_at: at,
    };
    await db('orders').insert(order);
    t.true(isUniqueViolation(await t.throwsAsync(db('orders').insert(order), { any: true })));

    const row = await db('members').where({ id: memberId }).first('created_at');
    t.is(new Date(row.created_at).toISOString(), '2026-11-22T10:41:14.123Z');
    const money = await db('orders').where({ order_number: 'ORD-1' }).first('total_amount');
    t.is(Number(money.total_amount), 10.5);
  } finally {
    await db.destroy();
  }
});

test.serial(
  'MariaDB: the name index rebuilt by 20261128000002 holds the trigrams the old triggers merged',
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass('SQLite: FTS5 never merged trigrams; the migration does nothing there');
      return;
    }
    const db = createDb(testConfig(database.env).database);
    try {
      await db.migrate.latest();
      await db.migrate.down({ name: '20261128000002_product_name_trigrams_binary_distinct.ts' });
      const { product } = await sellerAndCategory(db, 'Trigrams');
      const [cafe] = await db('products').insert(product('Café cafe'));
      const [plain] = await db('products').insert(product('plain lamp'));
      const trigrams = async (id: number) =>
        (await db('product_name_trigrams')
          .where('product_id', id)
          .orderBy('trigram')
          .pluck('trigram')) as string[];
      // The old triggers' DISTINCT, in the column's collation, kept one of "afé" and "afe".
      t.is((await trigrams(cafe)).filter((g) => g === 'afé' || g === 'afe').length, 1);
      const plainBefore = await trigrams(plain);
      // One written while no trigger was there (between the old triggers' drop and the new ones' creation).
      const [unindexed] = await db('products').insert(product('window lamp'));
      await db('product_name_trigrams').where('product_id', unindexed).delete();

      await db.migrate.up();
      t.deepEqual(await trigrams(cafe), [' ca', 'afe', 'afé', 'caf', 'fé ', 'é c']);
      t.deepEqual(await trigrams(plain), plainBefore);
      t.deepEqual(await trigrams(unindexed), [' la', 'amp', 'dow', 'ind', 'lam', 'ndo', 'ow ', 'w l', 'win']);
      // New writes keep both too.
      const [again] = await db('products').insert(product('Café cafe'));
      t.deepEqual(await trigrams(again), await trigrams(cafe));
    } finally {
      await db.destroy();
    }
  },
);

test.serial(
  'MariaDB: on a latin1 database every text column is utf8mb4, so any name is stored',
  async (t) => {
    if (DB_KIND !== 'mysql') {
      t.pass('SQLite stores any Unicode text');
      return;
    }
    const latin1 = await createTestDatabase();
    const admin = createDb(testConfig(latin1.env).database);
    try {
      await admin.raw('ALTER DATABASE CHARACTER SET latin1 COLLATE latin1_swedish_ci');
    } finally {
      await admin.destroy();
    }
    const app = await startTestApp({ database: latin1 });
    try {
      // A later migration that creates a text column by hand without naming utf8mb4 fails here (the rate
      // limiter's keys are ASCII by design).
      const [columns] = await app.db.raw(
        `SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME, ' ', CHARACTER_SET_NAME) AS col FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND CHARACTER_SET_NAME IS NOT NULL AND CHARACTER_SET_NAME NOT IN ('utf8mb4', 'ascii')`,
      );
      t.deepEqual(
        columns.map((c: { col: string }) => c.col),
        [],
      );
      const seller = await createMember(app, 'SELLER');
      const created = await app.request('POST', '/api/v1/products', {
        token: seller.token,
        body: {
          categoryId: await createCategory(app),
          name: '手作りの茶碗 😀',
          price: 12.5,
          stockQuantity: 3,
        },
      });
      t.is(created.status, 201, created.text);
      t.is(created.body.name, '手作りの茶碗 😀');
      const read = await app.request('GET', `/api/v1/products?keyword=${encodeURIComponent('茶碗 😀')}`);
      t.deepEqual(
        read.body.content.map((p: { name: string }) => p.name),
        ['手作りの茶碗 😀'],
      );
    } finally {
      await app.close();
      await latin1.drop();
    }
  },
);

test.serial(
  '20261129000001 gives the categories written before it NFC keys, and leaves a key another category holds',
  async (t) => {
    const db = createDb(testConfig(database.env).database);
    try {
      await db.migrate.latest();
      await db.migrate.down({ name: '20261129000001_category_name_key_nfc.ts' });
      const at = new Date();
      const composed = 'Café Rekey'.normalize('NFC');
      const decomposed = composed.normalize('NFD');
      // As the service wrote them before: the key is the name lowercased as sent.
      const insert = async (name: string, parentKey: number) =>
        Number(
          (
            await db('categories').insert({
              name,
              name_key: name.toLowerCase(),
              parent_key: parentKey,
              created_at: at,
            })
          )[0],
        );
      const alone = await insert(decomposed, 0);
      const parent = await insert('Rekey parent', 0);
      const pairComposed = await insert(composed, parent);
      const pairDecomposed = await insert(decomposed, parent);
      const plain = await insert('Plain Rekey', 0);
      const keyOf = async (id: number) =>
        String((await db('categories').where({ id }).first('name_key')).name_key);

      await db.migrate.up();
      t.is(await keyOf(alone), composed.toLowerCase());
      t.is(await keyOf(plain), 'plain rekey');
      // Two categories that existed before in both spellings stay two: the decomposed one keeps its key.
      t.is(await keyOf(pairComposed), composed.toLowerCase());
      t.is(await keyOf(pairDecomposed), decomposed.toLowerCase());
      // The unique index now refuses the other spelling of the rekeyed name.
      const error = await db('categories')
        .insert({ name: composed, name_key: composed.toLowerCase(), parent_key: 0, created_at: at })
        .then(
          () => null,
          (err: unknown) => err,
        );
      t.true(isUniqueViolation(error), String(error));

      await db.migrate.down({ name: '20261129000001_category_name_key_nfc.ts' });
      t.is(await keyOf(alone), decomposed.toLowerCase());
      t.is(await keyOf(pairDecomposed), decomposed.toLowerCase());
      await db.migrate.latest();
    } finally {
      await db.destroy();
    }
  },
);

test.serial(
  '20261129000002 brings product names and descriptions and member names written before it to NFC',
  async (t) => {
    const db = createDb(testConfig(database.env).database);
    try {
      await db.migrate.latest();
      await db.migrate.down({ name: '20261129000002_searched_text_nfc.ts' });
      const { sellerId, product } = await sellerAndCategory(db, 'NFC', 'Zoë Seller'.normalize('NFD'));
      const insert = async (name: string, description: string | null) =>
        Number((await db('products').insert({ ...product(name), description }))[0]);
      const composed = 'Crème lamp'.normalize('NFC');
      const decomposed = composed.normalize('NFD');
      const both = await insert(decomposed, decomposed);
      const nameOnly = await insert(decomposed, null);
      const plain = await insert('Plain lamp', 'plain');
      // U+095B (Devanagari ZA) decomposes under NFC into 2 code points: this name would grow past the column's 200.
      const atLimit = `${'a'.repeat(199)}\u095B`;
      const long = await insert(atLimit, null);
      const row = (id: number) => db('products').where({ id }).first('name', 'description', 'updated_at');
      const plainBefore = await row(plain);

      await db.migrate.up();
      t.like(await row(both), { name: composed, description: composed });
      t.like(await row(nameOnly), { name: composed, description: null });
      t.deepEqual(await row(plain), plainBefore);
      t.is((await row(long)).name, atLimit, 'a name NFC would take past its column keeps its spelling');
      t.is((await db('members').where({ id: sellerId }).first('name')).name, 'Zoë Seller'.normalize('NFC'));
      if (DB_KIND === 'mysql') {
        // The search index followed the name (its UPDATE trigger): the composed trigram is there, the old one gone.
        const trigrams = (await db('product_name_trigrams')
          .where('product_id', both)
          .pluck('trigram')) as string[];
        t.true(trigrams.includes('crè'), trigrams.join('|'));
        t.false(
          trigrams.some((g) => g.includes('\u0300')),
          trigrams.join('|'),
        );
      } else {
        // The FTS5 index followed the name (its UPDATE trigger): the composed spelling is found.
        const found = (await db.raw(
          `SELECT rowid AS id FROM products_name_fts WHERE products_name_fts MATCH ?`,
          ['"crème"'],
        )) as Array<{ id: number }>;
        t.deepEqual(found.map((r) => Number(r.id)).sort(), [both, nameOnly].sort());
      }
    } finally {
      await db.destroy();
    }
  },
);
