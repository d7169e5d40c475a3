// GET /products/cursor: a full walk over products sharing createdAt milliseconds (no gap, no duplicate),
// the filters, the cursor format (both Base64 alphabets) and INVALID_CURSOR.
import test from 'ava';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { createCategory, createMember, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let other: TestMember;
let categoryId: number;
let otherCategory: number;
const TIE = new Date(Date.UTC(2026, 5, 1, 12, 0, 0, 123));
const nameOf = new Map<number, string>();
let expectedOrder: Array<{
  id: number;
  createdAt: Date;
  status: string;
  sellerId: number;
  categoryId: number;
  price: number;
}> = [];

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  other = await createMember(app, 'SELLER');
  categoryId = await createCategory(app);
  otherCategory = await createCategory(app);
  const rows: Array<Record<string, unknown> & { created_at: Date }> = [];
  for (let i = 0; i < 230; i++) {
    // 120 products in ONE millisecond, the others spread around it (some also tied in pairs).
    const createdAt =
      i < 120 ? TIE : new Date(TIE.getTime() + (i % 2 === 0 ? 1 : -1) * (1 + Math.floor(i / 2)));
    rows.push({
      seller_id: i % 3 === 0 ? other.id : seller.id,
      category_id: i % 4 === 0 ? otherCategory : categoryId,
      name: `Cursor product ${i}`,
      price: `${10 + (i % 50)}.00`,
      stock_quantity: 1,
      status: i % 10 === 0 ? 'DRAFT' : i % 10 === 1 ? 'DELETED' : i % 10 === 2 ? 'SOLD_OUT' : 'ON_SALE',
      sales_count: 0,
      created_at: createdAt,
      updated_at: createdAt,
    });
  }
  for (let i = 0; i < rows.length; i += 100) await app.db('products').insert(rows.slice(i, i + 100));
  const stored = await app
    .db('products')
    .select('id', 'status', 'seller_id', 'category_id', 'price', 'name')
    .orderBy('id');
  for (const r of stored) nameOf.set(r.id, r.name);
  expectedOrder = stored
    .map((r, i) => ({
      id: r.id,
      createdAt: rows[i].created_at,
      status: r.status,
      sellerId: r.seller_id,
      categoryId: r.category_id,
      price: Number(r.price),
    }))
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id - a.id);
});
test.after.always(async () => {
  await app?.close();
});

async function walk(t: any, query: string, limit: number, token?: string) {
  const seen: number[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const url: string = `/api/v1/products/cursor?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await app.request('GET', url, { token });
    t.is(res.status, 200, JSON.stringify(res.body));
    t.deepEqual(Object.keys(res.body).sort(), ['content', 'hasNext', 'nextCursor', 'size']);
    t.is(res.body.size, res.body.content.length);
    seen.push(...res.body.content.map((p: { id: number }) => p.id));
    if (!res.body.hasNext) {
      t.is(res.body.nextCursor, null);
      return seen;
    }
    t.is(res.body.size, limit);
    t.is(typeof res.body.nextCursor, 'string');
    cursor = res.body.nextCursor;
  }
  throw new Error('walk did not end');
}

const publicRows = () => expectedOrder.filter((r) => r.status === 'ON_SALE' || r.status === 'SOLD_OUT');

test('full walk with 120 products in one millisecond: every visible product once, in createdAt desc, id desc order', async (t) => {
  for (const limit of [1, 7, 20, 100]) {
    const seen = await walk(t, '', limit);
    t.deepEqual(
      seen,
      publicRows().map((r) => r.id),
      `limit ${limit}`,
    );
  }
});

test('filters on the cursor list: categoryId, sellerId, status, price range; a seller sees own drafts; admin all but deleted', async (t) => {
  const ids = (rows: typeof expectedOrder) => rows.map((r) => r.id);
  t.deepEqual(
    await walk(t, `&categoryId=${otherCategory}`, 9),
    ids(publicRows().filter((r) => r.categoryId === otherCategory)),
  );
  t.deepEqual(
    await walk(t, `&sellerId=${other.id}&status=SOLD_OUT`, 3),
    ids(publicRows().filter((r) => r.sellerId === other.id && r.status === 'SOLD_OUT')),
  );
  t.deepEqual(
    await walk(t, '&minPrice=20&maxPrice=30.00', 11),
    ids(publicRows().filter((r) => r.price >= 20 && r.price <= 30)),
  );
  const named = await walk(t, '&keyword=PRODUCT%2011', 4); // "Cursor product 11", "...110".."...119"
  t.deepEqual(named, ids(publicRows().filter((r) => /^Cursor product 11\d*$/.test(nameOf.get(r.id)!))));
  t.true(named.length > 0);
  t.deepEqual(
    await walk(t, '', 13, seller.token),
    ids(
      expectedOrder.filter(
        (r) =>
          r.status === 'ON_SALE' ||
          r.status === 'SOLD_OUT' ||
          (r.status === 'DRAFT' && r.sellerId === seller.id),
      ),
    ),
  );
  const admin = await createMember(app, 'ADMIN');
  t.deepEqual(await walk(t, '', 50, admin.token), ids(expectedOrder.filter((r) => r.status !== 'DELETED')));
});

test('the cursor is Base64 of <yyyy-MM-ddTHH:mm:ss.SSS>:<id> of the last item; standard and URL-safe, padded or not, all work', async (t) => {
  const first = await app.request('GET', '/api/v1/products/cursor?limit=5');
  const last = first.body.content[4];
  const text = Buffer.from(first.body.nextCursor, 'base64url').toString();
  t.is(text, `${last.createdAt.slice(0, 23)}:${last.id}`);
  const expectedNext = await app.request(
    'GET',
    `/api/v1/products/cursor?limit=5&cursor=${first.body.nextCursor}`,
  );
  for (const variant of [
    Buffer.from(text).toString('base64'),
    Buffer.from(text).toString('base64').replace(/=+$/, ''),
    Buffer.from(text).toString('base64url'),
  ]) {
    const res = await app.request(
      'GET',
      `/api/v1/products/cursor?limit=5&cursor=${encodeURIComponent(variant)}`,
    );
    t.is(res.status, 200);
    t.deepEqual(res.body, expectedNext.body);
  }
});

test("a cursor needs no escaping: letters and digits only, so a space (an unescaped '+') is never one of ours: 400 INVALID_CURSOR", async (t) => {
  // Why the decoder does not read a space as '+': a cursor's text is digits, '-', 'T', ':' and '.', and the
  // Base64 of any such bytes never reaches the 6-bit values 62 and 63, so both alphabets give the same letters
  // and digits. Checked for every group of three bytes (and the one- and two-byte tails).
  const alphabet = [...'0123456789-T:.'];
  for (const a of alphabet)
    for (const b of ['', ...alphabet])
      for (const c of b === '' ? [''] : ['', ...alphabet])
        t.regex(Buffer.from(a + b + c).toString('base64'), /^[A-Za-z0-9]+=*$/, a + b + c);

  const issued: string[] = [];
  let cursor: string | null = null;
  do {
    // Sent as a client that forgets encodeURIComponent sends it.
    const res: ApiResponse = await app.request(
      'GET',
      `/api/v1/products/cursor?limit=37${cursor ? `&cursor=${cursor}` : ''}`,
    );
    t.is(res.status, 200, JSON.stringify(res.body));
    cursor = res.body.nextCursor;
    if (cursor) issued.push(cursor);
  } while (cursor);
  t.true(issued.length > 3);
  for (const issuedCursor of issued) t.regex(issuedCursor, /^[A-Za-z0-9]+$/);

  const [first] = issued;
  for (const cursorParam of [
    `${first.slice(0, 4)}+${first.slice(5)}`,
    `${first.slice(0, 4)}%2B${first.slice(5)}`,
  ]) {
    const res = await app.request('GET', `/api/v1/products/cursor?cursor=${cursorParam}`);
    t.is(res.status, 400, cursorParam);
    t.like(
      res.body,
      { status: 400, code: 'INVALID_CURSOR', message: 'cursor is not a valid cursor of this list' },
      cursorParam,
    );
  }
});

test('default limit 20; limit outside 1..100 is 400 VALIDATION_ERROR; unknown parameter is 400', async (t) => {
  const res = await app.request('GET', '/api/v1/products/cursor');
  t.is(res.body.size, 20);
  for (const qs of ['limit=0', 'limit=101', 'limit=abc', 'limit=2.5', 'page=1', 'size=10']) {
    const bad = await app.request('GET', `/api/v1/products/cursor?${qs}`);
    t.is(bad.status, 400, qs);
    t.is(bad.body.code, 'VALIDATION_ERROR', qs);
    t.true(Array.isArray(bad.body.errors));
  }
});

test('a repeated limit (limit=1&limit=2), or repeated categoryId/sellerId, is 400 VALIDATION_ERROR naming it', async (t) => {
  for (const [qs, field] of [
    ['limit=1&limit=2', 'query.limit'],
    ['limit=5&limit=5', 'query.limit'],
    ['categoryId=1&categoryId=2', 'query.categoryId'],
    ['sellerId=1&sellerId=1', 'query.sellerId'],
  ]) {
    const res = await app.request('GET', `/api/v1/products/cursor?${qs}`);
    t.is(res.status, 400, qs);
    t.like(res.body, { status: 400, code: 'VALIDATION_ERROR' });
    t.deepEqual(
      res.body.errors.map((e: { field: string }) => e.field),
      [field],
      qs,
    );
  }
});

test('undecodable cursors are 400 INVALID_CURSOR', async (t) => {
  const b64 = (s: string) => Buffer.from(s).toString('base64url');
  const bad = [
    '!!!',
    'not base64 at all',
    b64('hello'),
    b64('2026-06-01T12:00:00.123'),
    b64('2026-06-01T12:00:00.123:'),
    b64('2026-06-01T12:00:00.123:abc'),
    b64('2026-06-01T12:00:00.123:0'),
    b64('2026-06-01 12:00:00.123:5'),
    b64('2026-06-01T12:00:00:5'),
    b64('2026-02-30T12:00:00.123:5'),
    b64('2026-06-01T12:00:00.123Z:5'),
    b64('2026-06-01T12:00:00.123:99999999999'),
    '',
  ];
  for (const cursor of bad) {
    const res = await app.request('GET', `/api/v1/products/cursor?cursor=${encodeURIComponent(cursor)}`);
    t.is(res.status, 400, cursor);
    t.like(res.body, { status: 400, code: 'INVALID_CURSOR' }, cursor);
  }
});
