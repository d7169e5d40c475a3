// A keyword page in createdAt order of a keyword with more than KEYWORD_WINDOW_ROWS matches is looked for
// among the newest KEYWORD_WINDOW_ROWS products first, and asked of the name index only when they do not hold
// the whole page; a keyword with fewer matches goes to the index at once (product-repository.ts). The answer
// must be the one the index alone gives: the same products in the same order, the same total, on the offset
// list and the cursor list, whichever path served it, with the same exact-match semantics (case folded, `%`,
// `_` and quotes literal, non-ASCII and emoji compared as they are).
import test from 'ava';
import { KEYWORD_WINDOW_ROWS } from '../../lib/products/product-repository';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, uniq, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
const tag = uniq();
/** In 3 of 4 products, the newest included: its first pages come from the window. Wildcards and quotes in it. */
const COMMON = `Wïnd%_'"😀${tag}`;
/** In the other products: what `COMMON` would also find if `%` or `_` were wildcards. */
const DECOY = `WïndXY'"😀${tag}`;
/** In every product older than the window (more than KEYWORD_WINDOW_ROWS matches): the window finds none. */
const OLD = `old${tag}`;
/** 10 matches in the window, ~1,000 older ones: a page of 20 straddles the window's end. */
const STRADDLE = `strad${tag}`;
/** A few hundred matches, all old: straight to the index, no window. */
const RARE = `rare${tag}`;

interface Seeded {
  id: number;
  name: string;
  createdAt: number;
  status: string;
}
const seeded: Seeded[] = [];

test.before(async () => {
  app = await startTestApp({ logLevel: 'error' });
  seller = await createMember(app, 'SELLER');
  const categoryId = await createCategory(app);
  const total = 2 * KEYWORD_WINDOW_ROWS + 600;
  const base = Date.parse('2026-01-01T00:00:00Z');
  const rows = [];
  for (let i = 0; i < total; i++) {
    // i = 0 is the oldest. Pairs share a createdAt, so the id breaks ties.
    const age = total - i; // 1 = newest
    const names = [`Item ${i}`, i % 4 === 0 ? DECOY : COMMON];
    if (age > KEYWORD_WINDOW_ROWS + 50) names.push(OLD);
    if (age > KEYWORD_WINDOW_ROWS + 50 && i % 7 === 0) names.push(RARE);
    if ((age <= KEYWORD_WINDOW_ROWS && i % 97 === 0) || (age > KEYWORD_WINDOW_ROWS && i % 3 !== 0))
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
  await app.db.batchInsert('products', rows, 100);
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

/**
 * The visible matches of `keyword` (ON_SALE for anyone; the seller also sees its DRAFTs), newest first
 * (createdAt desc, id desc) or oldest first (ties still by id desc): what the index alone answers.
 */
function expected(
  keyword: string,
  options: { statuses?: string[]; direction?: 'asc' | 'desc' } = {},
): number[] {
  const statuses = options.statuses ?? ['ON_SALE'];
  const sign = options.direction === 'asc' ? -1 : 1;
  return seeded
    .filter((p) => statuses.includes(p.status) && p.name.toLowerCase().includes(keyword.toLowerCase()))
    .sort((a, b) => sign * (b.createdAt - a.createdAt) || b.id - a.id)
    .map((p) => p.id);
}

/** The name index's query (3+ characters), the walk through the newest rows (bounded by where they end). */
const INDEX_SQL = /products_name_fts|product_name_trigrams/i;
const WINDOW_SQL = /created_at.{0,2} [<>]=/i;

/**
 * Runs `fn` and reports which list queries it sent: the walk of the newest rows, the index query, and the plain
 * LIKE scan (what a keyword too short for the index falls back to when the walk does not hold the page).
 */
async function pathsOf(
  fn: () => Promise<unknown>,
): Promise<{ window: boolean; index: boolean; scan: boolean }> {
  const sqls: string[] = [];
  const listen = (q: { sql: string }) => sqls.push(q.sql);
  app.db.on('query', listen);
  try {
    await fn();
  } finally {
    app.db.off('query', listen);
  }
  const lists = sqls.filter((sql) => /order by/i.test(sql) && /like/i.test(sql));
  return {
    window: lists.some((sql) => WINDOW_SQL.test(sql) && !INDEX_SQL.test(sql)),
    index: lists.some((sql) => INDEX_SQL.test(sql)),
    scan: lists.some((sql) => !WINDOW_SQL.test(sql) && !INDEX_SQL.test(sql)),
  };
}

async function page(keyword: string, pageNo: number, size: number, extra = '', token?: string) {
  const res = await app.request(
    'GET',
    `/api/v1/products?keyword=${encodeURIComponent(keyword)}&page=${pageNo}&size=${size}${extra}`,
    { token },
  );
  return { status: res.status, body: res.body };
}

test.serial(
  'a common keyword: its first pages come from the window alone, equal to what the index gives',
  async (t) => {
    const all = expected(COMMON);
    t.true(all.length > KEYWORD_WINDOW_ROWS);
    // Upper case in the request: folded as everywhere; % and _ literal (the DECOY rows are not found).
    for (const pageNo of [0, 1, 4]) {
      let res!: Awaited<ReturnType<typeof page>>;
      const paths = await pathsOf(async () => {
        res = await page(COMMON.toUpperCase(), pageNo, 20);
      });
      t.is(res.status, 200);
      t.deepEqual(
        res.body.content.map((p: { id: number }) => p.id),
        all.slice(pageNo * 20, pageNo * 20 + 20),
      );
      t.is(res.body.totalElements, all.length);
      t.deepEqual(paths, { window: true, index: false, scan: false }, `page ${pageNo}`);
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
  t.deepEqual(paths, { window: false, index: true, scan: false });
});

test.serial(
  'a common keyword only in older rows, and one straddling the window end: the index completes the page',
  async (t) => {
    for (const keyword of [OLD, STRADDLE]) {
      const all = expected(keyword);
      t.true(all.length > KEYWORD_WINDOW_ROWS, keyword);
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
      t.deepEqual(paths, { window: true, index: true, scan: false }, keyword);
    }
  },
);

test.serial('a keyword with fewer matches than the window has rows goes to the index at once', async (t) => {
  const all = expected(RARE);
  t.true(all.length > 20 && all.length <= KEYWORD_WINDOW_ROWS);
  let res!: Awaited<ReturnType<typeof page>>;
  const paths = await pathsOf(async () => {
    res = await page(RARE, 0, 20);
  });
  t.is(res.status, 200);
  t.deepEqual(
    res.body.content.map((p: { id: number }) => p.id),
    all.slice(0, 20),
  );
  t.is(res.body.totalElements, all.length);
  t.deepEqual(paths, { window: false, index: true, scan: false });
});

test.serial('1 and 2 character keywords with many matches walk the window too: same answers', async (t) => {
  for (const keyword of ['ï', 'ïN', '%_']) {
    const all = expected(keyword);
    t.true(all.length > KEYWORD_WINDOW_ROWS, keyword);
    for (const pageNo of [0, 3]) {
      let res!: Awaited<ReturnType<typeof page>>;
      const paths = await pathsOf(async () => {
        res = await page(keyword, pageNo, 20);
      });
      t.is(res.status, 200);
      t.deepEqual(
        res.body.content.map((p: { id: number }) => p.id),
        all.slice(pageNo * 20, pageNo * 20 + 20),
        keyword,
      );
      t.is(res.body.totalElements, all.length, keyword);
      t.deepEqual(paths, { window: true, index: false, scan: false }, keyword);
    }
  }
});

test.serial(
  'the window serves newest first only: oldest first takes the index; a seller sees its DRAFTs on either path',
  async (t) => {
    const asc = expected(COMMON, { direction: 'asc' });
    let res!: Awaited<ReturnType<typeof page>>;
    let paths = await pathsOf(async () => {
      res = await page(COMMON, 0, 20, '&sort=createdAt,asc');
    });
    t.is(res.status, 200);
    t.deepEqual(
      res.body.content.map((p: { id: number }) => p.id),
      asc.slice(0, 20),
    );
    t.deepEqual(paths, { window: false, index: true, scan: false }, 'asc');

    // The seller's own view: its DRAFTs are visible, inside the window too.
    const own = expected(COMMON, { statuses: ['ON_SALE', 'DRAFT'] });
    for (const pageNo of [0, 2]) {
      paths = await pathsOf(async () => {
        res = await page(COMMON, pageNo, 20, '', seller.token);
      });
      t.is(res.status, 200);
      t.deepEqual(
        res.body.content.map((p: { id: number }) => p.id),
        own.slice(pageNo * 20, pageNo * 20 + 20),
        `seller, page ${pageNo}`,
      );
      t.is(res.body.totalElements, own.length);
      t.deepEqual(paths, { window: true, index: false, scan: false }, `seller, page ${pageNo}`);
    }

    // status=DRAFT: a few dozen matches, so the count sends it to the index at once.
    const drafts = expected(COMMON, { statuses: ['DRAFT'] });
    t.true(drafts.length > 20 && drafts.length <= KEYWORD_WINDOW_ROWS);
    paths = await pathsOf(async () => {
      res = await page(COMMON, 0, 20, '&status=DRAFT', seller.token);
    });
    t.is(res.status, 200);
    t.deepEqual(
      res.body.content.map((p: { id: number }) => p.id),
      drafts.slice(0, 20),
    );
    t.is(res.body.totalElements, drafts.length);
    t.deepEqual(paths, { window: false, index: true, scan: false }, 'status=DRAFT');
  },
);

test.serial(
  'the cursor list walks every match of each keyword in order, whichever path serves a page',
  async (t) => {
    for (const keyword of [COMMON, OLD, STRADDLE, RARE]) {
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `keyword=${encodeURIComponent(keyword)}&limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const res = await app.request('GET', `/api/v1/products/cursor?${query}`);
        t.is(res.status, 200);
        seen.push(...res.body.content.map((p: { id: number }) => p.id));
        cursor = res.body.nextCursor;
      } while (cursor);
      t.deepEqual(seen, expected(keyword), keyword);
    }
  },
);
