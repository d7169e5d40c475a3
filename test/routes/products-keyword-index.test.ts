// The keyword search is served by the name index (FTS5 trigram on SQLite, product_name_trigrams on
// MariaDB/MySQL) with the exact semantics the plain LIKE had, and the index follows every write of the name
// inside the writer's transaction.
import test from 'ava';
import type { Knex } from 'knex';
import { applyFilters, applySort, parseSort } from '../../lib/products/product-repository';
import { applyKeywordCheck, keywordTrigrams } from '../../lib/products/keyword-index';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, createProduct, uniq, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let categoryId: number;
const NAMES = [
  'Blue LAMP Stand',
  'café noir',
  'Cafe plain',
  '😀😀 mug',
  '50% off_sale',
  'snake_case kettle',
  'ÄRGER Box',
  'МОСКВА Mug',
  'ΣΟΦΙΑ box',
  'ΣΟΦΟΣΑ θήκη',
];
test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  categoryId = await createCategory(app);
  for (const name of NAMES) await createProduct(app, seller.id, { categoryId, name });
});
test.after.always(async () => {
  await app?.close();
});

async function search(keyword: string, category = categoryId) {
  const res = await app.request(
    'GET',
    `/api/v1/products?categoryId=${category}&size=100&keyword=${encodeURIComponent(keyword)}`,
  );
  return {
    status: res.status,
    total: res.body.totalElements as number,
    names: ((res.body.content ?? []) as Array<{ name: string }>).map((p) => p.name).sort(),
  };
}

const found = (...names: string[]) => ({ status: 200, total: names.length, names: [...names].sort() });

test('index-served keywords (3+ characters): case folded, accents, emoji, % and _ exact', async (t) => {
  t.deepEqual(await search('LAMP st'), found('Blue LAMP Stand'));
  t.deepEqual(await search('lamp'), found('Blue LAMP Stand'));
  t.deepEqual(await search('CAFÉ'), found('café noir'));
  t.deepEqual(await search('cafe'), found('Cafe plain'));
  t.deepEqual(await search('caf'), found('café noir', 'Cafe plain'));
  t.deepEqual(await search('😀😀 '), found('😀😀 mug'));
  t.deepEqual(await search('😁😀 '), found());
  t.deepEqual(await search('50%'), found('50% off_sale'));
  t.deepEqual(await search('f_s'), found('50% off_sale'));
  t.deepEqual(await search('e_c'), found('snake_case kettle'));
  t.deepEqual(await search('f s'), found()); // `_` is not a wildcard
  t.deepEqual(await search('___'), found());
  t.deepEqual(await search('"mug'), found()); // FTS5 syntax characters are plain text
  t.deepEqual(await search('nothing like it'), found());
  // Upper-case non-ASCII letters are found by their lower case on both databases (on SQLite both sides are
  // lowered in full Unicode by a function of the connection's, its own LOWER folds ASCII only).
  t.deepEqual(await search('ärger'), found('ÄRGER Box'));
  t.deepEqual(await search('москва'), found('МОСКВА Mug'));
  t.deepEqual(await search('Москва'), found('МОСКВА Mug'));
  t.deepEqual(await search('σοφια'), found('ΣΟΦΙΑ box'));
  // Greek's final sigma: 'ΣΟΦΟΣ' alone lowers to 'σοφος' in JavaScript, within 'ΣΟΦΟΣΑ' to 'σοφοσα'; MariaDB's
  // LOWER and the SQLite search both lower Σ to σ wherever it stands.
  t.deepEqual(await search('ΣΟΦΟΣ'), found('ΣΟΦΟΣΑ θήκη'));
  t.deepEqual(await search('σοφοσ'), found('ΣΟΦΟΣΑ θήκη'));
  t.deepEqual(await search('Ärger'), found('ÄRGER Box'));
  t.deepEqual(await search('ÄRGER'), found('ÄRGER Box'));
  t.deepEqual(await search('ÄRGER BOX'), found('ÄRGER Box'));
});

test('1-2 character keywords keep the exact scan: same semantics', async (t) => {
  t.deepEqual(await search('mp'), found('Blue LAMP Stand'));
  t.deepEqual(await search('é'), found('café noir'));
  t.deepEqual(await search('😀'), found('😀😀 mug'));
  t.deepEqual(await search('😁'), found());
  t.deepEqual(await search('_'), found('50% off_sale', 'snake_case kettle'));
  t.deepEqual(await search('%'), found('50% off_sale'));
});

test('the index never drops a match: for names whose trigrams collations or case foldings merge, the index-served list is the exact check alone', async (t) => {
  // Its own category, so the other tests' names stay out. MariaDB's general/unicode collations call "afé" and
  // "afe", "ｐｓ５" and "ps5", any two emoji one value; JavaScript lowers "İ" to "i" and a combining dot, while
  // SQLite's tokenizer folds it to "i".
  const category = await createCategory(app);
  const names = [
    'Café cafe',
    'ＰＳ５ PS5',
    '😀😀😀 😁😁😁',
    'İstanbul Rug',
    'Straße strasse',
    'ΟΔΟΣ Map',
    'МОСКВА Mug',
  ];
  for (const name of names) await createProduct(app, seller.id, { categoryId: category, name });
  const exact = async (keyword: string) => {
    const rows = await applyKeywordCheck(
      app.db('products').where('category_id', category).select('name'),
      keyword,
      DB_KIND === 'mysql',
    );
    return rows.map((row: { name: string }) => row.name).sort();
  };
  const keywords = [
    'cafe',
    'afe',
    'café',
    'ps5',
    'ＰＳ５',
    '😁😁😁',
    '😀😀😀',
    'İstanbul',
    'İst',
    'İs',
    'strasse',
    'straße',
    'ΟΔΟΣ',
    'москва',
  ];
  for (const keyword of keywords) {
    const expected = await exact(keyword);
    t.true(expected.length > 0, `${keyword}: the exact check finds its name`);
    t.deepEqual(await search(keyword, category), found(...expected), keyword);
  }
  // The exact check is what the cursor list runs (fewer than its window's rows): both lists agree.
  for (const keyword of keywords) {
    const res = await app.request(
      'GET',
      `/api/v1/products/cursor?categoryId=${category}&limit=100&keyword=${encodeURIComponent(keyword)}`,
    );
    t.deepEqual(
      (res.body.content as Array<{ name: string }>).map((p) => p.name).sort(),
      (await search(keyword, category)).names,
      keyword,
    );
  }
  t.is(await indexMismatches(app.db), 0);
});

test('the index follows create, name edit, description edit and delete through the API', async (t) => {
  const category = await createCategory(app);
  const tag = uniq();
  const created = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId: category, name: `Walnut ${tag} Desk`, price: 10, stockQuantity: 3 },
  });
  t.is(created.status, 201);
  const id = created.body.id as number;
  t.deepEqual(await search(`walnut ${tag}`, category), found(`Walnut ${tag} Desk`));

  const renamed = await app.request('PATCH', `/api/v1/products/${id}`, {
    token: seller.token,
    body: { name: `Oak ${tag} Table` },
  });
  t.is(renamed.status, 200);
  t.is(renamed.body.name, `Oak ${tag} Table`);
  t.deepEqual(await search('walnut', category), found());
  t.deepEqual(await search(`oak ${tag}`, category), found(`Oak ${tag} Table`));

  const described = await app.request('PATCH', `/api/v1/products/${id}`, {
    token: seller.token,
    body: { description: 'walnut veneer', stockQuantity: 7 },
  });
  t.is(described.status, 200);
  t.deepEqual(await search(`${tag} table`, category), found(`Oak ${tag} Table`));
  t.deepEqual(await search('walnut', category), found()); // name only, as before

  t.is((await app.request('DELETE', `/api/v1/products/${id}`, { token: seller.token })).status, 204);
  t.deepEqual(await search(`oak ${tag}`, category), found());
  t.deepEqual(await indexedIds(app.db, `oak ${tag}`), [id]); // soft delete: the row, and its index, stay
  await app.db('products').where({ id }).delete();
  t.deepEqual(await indexedIds(app.db, `oak ${tag}`), []);
  t.is(await indexMismatches(app.db), 0);
});

test('a rolled-back insert or rename leaves the index as it was', async (t) => {
  // Its own category: a random tag may hold a trigram the other tests search for (`d8caf83278` holds "caf").
  const category = await createCategory(app);
  const tag = uniq();
  const id = await createProduct(app, seller.id, { categoryId: category, name: `Birch ${tag}` });
  const rollback = new Error('rollback');
  const err = await t.throwsAsync(
    app.db.transaction(async (trx) => {
      // The id the insert reports (not MAX(id): the other tests of this file insert products concurrently).
      const [mapleId] = await trx('products').insert({
        seller_id: seller.id,
        category_id: category,
        name: `Maple ${tag}`,
        price: '1.00',
        stock_quantity: 1,
        status: 'ON_SALE',
        sales_count: 0,
        created_at: new Date(),
        updated_at: new Date(),
      });
      await trx('products')
        .where({ id })
        .update({ name: `Cedar ${tag}` });
      t.deepEqual(await indexedIds(trx, `maple ${tag}`), [Number(mapleId)]); // visible inside
      t.deepEqual(await indexedIds(trx, `cedar ${tag}`), [id]);
      throw rollback;
    }),
  );
  t.is(err, rollback);
  t.deepEqual(await indexedIds(app.db, `maple ${tag}`), []);
  t.deepEqual(await indexedIds(app.db, `cedar ${tag}`), []);
  t.deepEqual(await indexedIds(app.db, `birch ${tag}`), [id]);
  t.deepEqual(await search(`birch ${tag}`, category), found(`Birch ${tag}`));
  t.is(await indexMismatches(app.db), 0);
});

test('the keyword query and its count use the index (EXPLAIN); 2 characters do not', async (t) => {
  const list = (keyword: string) =>
    applySort(
      applyFilters(app.db, app.db('products').select('*'), null, { keyword }),
      parseSort('createdAt,desc'),
    )
      .limit(20)
      .toSQL();
  const count = applyFilters(app.db, app.db('products').count({ n: '*' }), null, { keyword: 'lamp' }).toSQL();
  const uses = async (query: { sql: string; bindings: readonly unknown[] }) => {
    const plan = await explain(app.db, query);
    return DB_KIND === 'mysql'
      ? plan.some((row) => row.table === 'product_name_trigrams' && row.key === 'PRIMARY')
      : plan.some((row) => /products_name_fts VIRTUAL TABLE INDEX/.test(String(row.detail))) &&
          plan.some((row) => /SEARCH products USING INTEGER PRIMARY KEY/.test(String(row.detail)));
  };
  t.true(await uses(list('lamp')));
  t.true(await uses(count));
  t.false(await uses(list('mp')));
});

test('keywordTrigrams: by code point, distinct, at most 4 spread over the keyword', (t) => {
  t.deepEqual(keywordTrigrams('lamp'), ['lam', 'amp']);
  t.deepEqual(keywordTrigrams('😀😀 m'), ['😀😀 ', '😀 m']);
  t.deepEqual(keywordTrigrams('aaaa'), ['aaa']);
  t.deepEqual(keywordTrigrams('ab'), []);
  t.deepEqual(keywordTrigrams('abcdefgh'), ['abc', 'cde', 'def', 'fgh']);
});

/** Products the index itself offers for a keyword (no exact check). */
async function indexedIds(db: Knex, keyword: string): Promise<number[]> {
  const lowered = keyword.toLowerCase();
  if (DB_KIND === 'mysql') {
    const trigrams = keywordTrigrams(lowered);
    const rows = await db('product_name_trigrams')
      .whereIn('trigram', trigrams)
      .groupBy('product_id')
      .havingRaw('COUNT(*) = ?', [trigrams.length])
      .select('product_id');
    return rows.map((r) => Number(r.product_id)).sort((a, b) => a - b);
  }
  const rows = await db.raw('SELECT rowid AS id FROM products_name_fts WHERE products_name_fts MATCH ?', [
    `"${lowered}"`,
  ]);
  return (rows as Array<{ id: number }>).map((r) => Number(r.id)).sort((a, b) => a - b);
}

/** 0 when the index holds exactly what the products' names say. */
async function indexMismatches(db: Knex): Promise<number> {
  if (DB_KIND === 'sqlite') {
    // FTS5's own check against the content table (throws SQLITE_CORRUPT_VTAB on a difference).
    await db.raw(`INSERT INTO products_name_fts (products_name_fts, rank) VALUES ('integrity-check', 1)`);
    return 0;
  }
  // Distinct as the lookup compares (bytes): the column's collation would merge "afé" and "afe".
  const expected = `SELECT DISTINCT CONVERT(SUBSTRING(LOWER(pr.name), p.n, 3) USING utf8mb4) COLLATE utf8mb4_bin AS trigram,
      pr.id AS product_id
      FROM products pr JOIN product_name_trigram_positions p ON p.n <= CHAR_LENGTH(LOWER(pr.name)) - 2`;
  const [[missing]] = await db.raw(
    `SELECT COUNT(*) AS n FROM (${expected}) e WHERE NOT EXISTS (SELECT 1 FROM product_name_trigrams t
      WHERE t.trigram = e.trigram AND t.product_id = e.product_id)`,
  );
  const [[extra]] = await db.raw(
    `SELECT COUNT(*) AS n FROM product_name_trigrams t WHERE NOT EXISTS (SELECT 1 FROM (${expected}) e
      WHERE t.trigram = e.trigram AND t.product_id = e.product_id)`,
  );
  return Number(missing.n) + Number(extra.n);
}

async function explain(
  db: Knex,
  query: { sql: string; bindings: readonly unknown[] },
): Promise<Array<Record<string, unknown>>> {
  const prefix = DB_KIND === 'mysql' ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN';
  const result = await db.raw(`${prefix} ${query.sql}`, query.bindings as Knex.Value[]);
  return DB_KIND === 'mysql' ? result[0] : result;
}
