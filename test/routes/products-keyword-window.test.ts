// A keyword page in createdAt order is looked for among the newest KEYWORD_WINDOW_ROWS visible products
// first, and asked of the name index only when they do not hold the whole page (product-repository.ts). The
// answer must be the one the index alone gives: the same products in the same order, the same total, on the
// offset list and the cursor list, whichever path served it.
import test from 'ava';
import { KEYWORD_WINDOW_ROWS } from '../../lib/products/product-repository';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, uniq } from '../helpers/factories';

let app: TestApp;
const tag = uniq();
/** Every 4th product: ~250 matches among the newest 1,000 rows, so its first pages come from the window. */
const COMMON = `wind${tag}`;
/** Only in rows older than the window: every page falls back to the index. */
const RARE = `rare${tag}`;
/** 10 matches in the window, 30 older ones: a page of 20 straddles the window's end. */
const STRADDLE = `strad${tag}`;

interface Seeded {
  id: number;
  name: string;
  createdAt: number;
  status: string;
}
const seeded: Seeded[] = [];

test.before(async () => {
  app = await startTestApp({ logLevel: 'error' });
  const seller = await createMember(app, 'SELLER');
  const categoryId = await createCategory(app);
  const total = KEYWORD_WINDOW_ROWS + 400;
  const base = Date.parse('2026-01-01T00:00:00Z');
  const rows = [];
  for (let i = 0; i < total; i++) {
    // i = 0 is the oldest. Pairs share a createdAt, so the id breaks ties.
    const age = total - i; // 1 = newest
    const names = [`Item ${i}`];
    if (i % 4 === 0) names.push(COMMON);
    if (age > KEYWORD_WINDOW_ROWS + 50 && i % 7 === 0) names.push(RARE);
    if ((age <= KEYWORD_WINDOW_ROWS && i % 97 === 0) || (age > KEYWORD_WINDOW_ROWS && i % 13 === 0))
      names.push(STRADDLE);
    // A few drafts: never visible to an anonymous caller, yet inside the window.
    const status = i % 50 === 5 ? 'DRAFT' : 'ON_SALE';
    rows.push({
      seller_id: seller.id,
      category_id: categoryId,
      name: names.join(' '),
      description: 'window test',
      price: '10.00',
      stock_quantity: 10,
      status,
      sales_count: 0,
      created_at: new Date(base + Math.floor(i / 2) * 1000),
      updated_at: new Date(base),
    });
  }
  await app.db.batchInsert('products', rows, 50);
  const stored = await app
    .db('products')
    .where('description', 'window test')
    .select('id', 'name', 'created_at', 'status');
  for (const r of stored)
    seeded.push({
      id: Number(r.id),
      name: r.name,
      createdAt: new Date(r.created_at).getTime(),
      status: r.status,
    });
});
test.after.always(async () => {
  await app?.close();
});

/** The visible matches of `keyword`, newest first (createdAt desc, id desc): what the index alone answers. */
function expected(keyword: string): number[] {
  return seeded
    .filter((p) => p.status === 'ON_SALE' && p.name.toLowerCase().includes(keyword.toLowerCase()))
    .sort((a, b) => b.createdAt - a.createdAt || b.id - a.id)
    .map((p) => p.id);
}

/** The window query: the page's ids from the newest rows, joined back to products. */
const WINDOW_SQL = /join \(select/i;

/** Runs `fn` and reports which list queries it sent: the window query, the index query, or both. */
async function pathsOf(fn: () => Promise<unknown>): Promise<{ window: boolean; index: boolean }> {
  const sqls: string[] = [];
  const listen = (q: { sql: string }) => sqls.push(q.sql);
  app.db.on('query', listen);
  try {
    await fn();
  } finally {
    app.db.off('query', listen);
  }
  const lists = sqls.filter((sql) => /order by/i.test(sql) && /products/i.test(sql));
  return {
    window: lists.some((sql) => WINDOW_SQL.test(sql)),
    index: lists.some((sql) => !WINDOW_SQL.test(sql)),
  };
}

async function page(keyword: string, pageNo: number, size: number) {
  const res = await app.request('GET', `/api/v1/products?keyword=${keyword}&page=${pageNo}&size=${size}`);
  return { status: res.status, body: res.body };
}

test.serial(
  'a common keyword: its first pages come from the window alone, equal to what the index gives',
  async (t) => {
    const all = expected(COMMON);
    t.true(all.length > 300);
    for (const pageNo of [0, 1, 4]) {
      let res!: Awaited<ReturnType<typeof page>>;
      const paths = await pathsOf(async () => {
        res = await page(COMMON, pageNo, 20);
      });
      t.is(res.status, 200);
      t.deepEqual(
        res.body.content.map((p: { id: number }) => p.id),
        all.slice(pageNo * 20, pageNo * 20 + 20),
      );
      t.is(res.body.totalElements, all.length);
      t.deepEqual(paths, { window: true, index: false }, `page ${pageNo}`);
    }
  },
);

test.serial('a page deeper than a quarter of the window goes to the index at once', async (t) => {
  const all = expected(COMMON);
  let res!: Awaited<ReturnType<typeof page>>;
  const paths = await pathsOf(async () => {
    res = await page(COMMON, 13, 20); // rows 260..279: more than KEYWORD_WINDOW_ROWS / 4
  });
  t.is(res.status, 200);
  t.deepEqual(
    res.body.content.map((p: { id: number }) => p.id),
    all.slice(260, 280),
  );
  t.deepEqual(paths, { window: false, index: true });
});

test.serial(
  'a keyword only in older rows, and one straddling the window end: the index completes the page',
  async (t) => {
    for (const keyword of [RARE, STRADDLE]) {
      const all = expected(keyword);
      t.true(all.length > 20, keyword);
      let res!: Awaited<ReturnType<typeof page>>;
      const paths = await pathsOf(async () => {
        res = await page(keyword, 0, 20);
      });
      t.is(res.status, 200);
      t.deepEqual(
        res.body.content.map((p: { id: number }) => p.id),
        all.slice(0, 20),
        keyword,
      );
      t.is(res.body.totalElements, all.length);
      t.deepEqual(paths, { window: true, index: true }, keyword);
    }
  },
);

test.serial(
  'the cursor list walks every match of each keyword in order, whichever path serves a page',
  async (t) => {
    for (const keyword of [COMMON, STRADDLE, RARE]) {
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `keyword=${keyword}&limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const res = await app.request('GET', `/api/v1/products/cursor?${query}`);
        t.is(res.status, 200);
        seen.push(...res.body.content.map((p: { id: number }) => p.id));
        cursor = res.body.nextCursor;
      } while (cursor);
      t.deepEqual(seen, expected(keyword), keyword);
    }
  },
);
