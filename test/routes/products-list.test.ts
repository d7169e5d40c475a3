// GET /products: every filter and sort checked against an independent computation over a few hundred
// generated products (visibility per caller included), plus the validation of the query.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, type TestMember } from '../helpers/factories';

interface Row {
  id: number;
  sellerId: number;
  categoryId: number;
  name: string;
  priceCents: number;
  status: 'DRAFT' | 'ON_SALE' | 'SOLD_OUT' | 'DELETED';
  salesCount: number;
  createdAt: Date;
}

let app: TestApp;
let sellers: TestMember[];
let buyer: TestMember;
let admin: TestMember;
let categories: number[];
const rows: Row[] = [];

// A small deterministic generator, so a failure can be replayed.
let seed = 42;
const rand = (n: number) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
};
const WORDS = [
  'Lamp',
  'lamp',
  'LAMPSHADE',
  'Desk',
  'Chair',
  '50% off',
  '100%',
  'snake_case',
  'snakeXcase',
  'Mug',
];

test.before(async () => {
  app = await startTestApp();
  sellers = await Promise.all([
    createMember(app, 'SELLER'),
    createMember(app, 'SELLER'),
    createMember(app, 'SELLER'),
  ]);
  buyer = await createMember(app, 'BUYER');
  admin = await createMember(app, 'ADMIN');
  categories = [await createCategory(app), await createCategory(app), await createCategory(app)];
  const base = Date.UTC(2026, 0, 1);
  const statuses: Row['status'][] = ['ON_SALE', 'ON_SALE', 'ON_SALE', 'SOLD_OUT', 'DRAFT', 'DELETED'];
  const insert = [];
  for (let i = 0; i < 320; i++) {
    const createdAt = new Date(base + rand(60) * 1000 + (rand(3) === 0 ? 0 : rand(1000))); // many ties
    insert.push({
      seller_id: sellers[rand(3)].id,
      category_id: categories[rand(3)],
      name: `${WORDS[rand(WORDS.length)]} ${i}`,
      description: null,
      price: `${rand(200)}.${String(rand(4) * 25).padStart(2, '0')}`, // many equal prices
      stock_quantity: 5,
      status: statuses[rand(statuses.length)],
      sales_count: rand(8), // many equal counts
      created_at: createdAt,
      updated_at: createdAt,
    });
  }
  for (let i = 0; i < insert.length; i += 100) await app.db('products').insert(insert.slice(i, i + 100));
  const stored = await app.db('products').select('*').orderBy('id');
  for (const r of stored) {
    const [whole, frac = '0'] = String(Number(r.price).toFixed(2)).split('.');
    rows.push({
      id: r.id,
      sellerId: r.seller_id,
      categoryId: r.category_id,
      name: r.name,
      priceCents: Number(whole) * 100 + Number(frac),
      status: r.status,
      salesCount: r.sales_count,
      createdAt: new Date(insert[r.id - stored[0].id].created_at),
    });
  }
});
test.after.always(async () => {
  await app?.close();
});

type Viewer = { role: 'ANON' | 'BUYER' | 'SELLER' | 'ADMIN'; id?: number; token?: string };
interface Q {
  keyword?: string;
  categoryId?: number;
  status?: Row['status'];
  sellerId?: number;
  minPrice?: string;
  maxPrice?: string;
  sort?: string;
  page?: number;
  size?: number;
}

const cents = (s: string) => Math.round(Number(s) * 100);

/** The independent model of API.md's visibility, filters and sorts. */
function expected(viewer: Viewer, q: Q): Row[] {
  const visible = (r: Row) =>
    r.status !== 'DELETED' &&
    (r.status !== 'DRAFT' ||
      viewer.role === 'ADMIN' ||
      (viewer.role === 'SELLER' && r.sellerId === viewer.id));
  const [field, dir = 'asc'] = (q.sort ?? 'createdAt,desc').split(',');
  const key = (r: Row) =>
    field === 'price' ? r.priceCents : field === 'salesCount' ? r.salesCount : r.createdAt.getTime();
  return rows
    .filter(visible)
    .filter((r) => !q.keyword || r.name.toLowerCase().includes(q.keyword.toLowerCase()))
    .filter((r) => q.categoryId === undefined || r.categoryId === q.categoryId)
    .filter((r) => q.status === undefined || r.status === q.status)
    .filter((r) => q.sellerId === undefined || r.sellerId === q.sellerId)
    .filter((r) => q.minPrice === undefined || r.priceCents >= cents(q.minPrice))
    .filter((r) => q.maxPrice === undefined || r.priceCents <= cents(q.maxPrice))
    .sort((a, b) => (key(a) - key(b)) * (dir === 'desc' ? -1 : 1) || b.id - a.id);
}

async function fetchAll(viewer: Viewer, q: Q) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
  return app.request('GET', `/api/v1/products?${params}`, { token: viewer.token });
}

async function check(t: any, viewer: Viewer, q: Q) {
  const size = q.size ?? 20;
  const page = q.page ?? 0;
  const all = expected(viewer, q);
  const res = await fetchAll(viewer, q);
  const label = `${viewer.role} ${JSON.stringify(q)}`;
  t.is(res.status, 200, `${label}: ${JSON.stringify(res.body)}`);
  t.deepEqual(
    res.body.content.map((p: { id: number }) => p.id),
    all.slice(page * size, (page + 1) * size).map((r) => r.id),
    label,
  );
  t.deepEqual(
    {
      page: res.body.page,
      size: res.body.size,
      totalElements: res.body.totalElements,
      totalPages: res.body.totalPages,
      hasNext: res.body.hasNext,
    },
    {
      page,
      size,
      totalElements: all.length,
      totalPages: Math.ceil(all.length / size),
      hasNext: (page + 1) * size < all.length,
    },
    label,
  );
}

const anon = (): Viewer => ({ role: 'ANON' });
const asSeller = (i: number): Viewer => ({ role: 'SELLER', id: sellers[i].id, token: sellers[i].token });

test('default list: ON_SALE and SOLD_OUT by createdAt desc, id desc, page envelope', async (t) => {
  t.true(rows.length === 320);
  await check(t, anon(), {});
  await check(t, anon(), { page: 3, size: 17 });
  await check(t, { role: 'BUYER', token: buyer.token }, { size: 100 });
  const last = Math.floor(expected(anon(), {}).length / 50);
  await check(t, anon(), { page: last, size: 50 });
  await check(t, anon(), { page: last + 5, size: 50 }); // past the end: empty content, same totals
});

test('every sort field and direction, ties broken by id desc', async (t) => {
  for (const sort of [
    'createdAt,desc',
    'createdAt,asc',
    'price,desc',
    'price,asc',
    'salesCount,desc',
    'salesCount,asc',
    'price',
  ]) {
    await check(t, anon(), { sort, size: 100 });
    await check(t, anon(), { sort, size: 30, page: 2 });
  }
});

test('filters alone and combined: keyword, categoryId, sellerId, status, inclusive price range', async (t) => {
  const prices = rows.map((r) => r.priceCents).sort((a, b) => a - b);
  const lo = (prices[80] / 100).toFixed(2);
  const hi = (prices[200] / 100).toFixed(2);
  const cases: Q[] = [
    { keyword: 'lamp' },
    { keyword: 'LAMP', size: 100 },
    { keyword: 'mp' },
    { categoryId: categories[1], size: 100 },
    { sellerId: sellers[2].id, size: 100 },
    { status: 'SOLD_OUT', size: 100 },
    { status: 'ON_SALE', sort: 'price,asc', size: 100 },
    { minPrice: lo, size: 100 },
    { maxPrice: hi, size: 100 },
    { minPrice: lo, maxPrice: hi, sort: 'price,desc', size: 100 },
    { minPrice: lo, maxPrice: lo, size: 100 }, // inclusive on both ends
    { keyword: 'desk', categoryId: categories[0], minPrice: '10', sort: 'salesCount,desc' },
    { sellerId: sellers[0].id, categoryId: categories[2], maxPrice: '150.5', sort: 'createdAt,asc' },
  ];
  for (const q of cases) await check(t, anon(), q);
  t.true(expected(anon(), { minPrice: lo, maxPrice: lo }).length > 0, 'the inclusive case hits rows');
});

test('keyword: % and _ match literally, not as wildcards', async (t) => {
  await check(t, anon(), { keyword: '%', size: 100 });
  await check(t, anon(), { keyword: '50%', size: 100 });
  await check(t, anon(), { keyword: 'snake_case', size: 100 });
  await check(t, anon(), { keyword: '_', size: 100 });
  const res = await fetchAll(anon(), { keyword: 'snake_case', size: 100 });
  t.true(res.body.content.length > 0);
  t.true(res.body.content.every((p: { name: string }) => p.name.startsWith('snake_case')));
  const none = await fetchAll(anon(), { keyword: '!%' });
  t.is(none.body.totalElements, 0);
});

test('visibility: a seller also sees own DRAFTs (status=DRAFT shows only those); admin sees all but DELETED', async (t) => {
  await check(t, asSeller(0), { size: 100 });
  await check(t, asSeller(1), { status: 'DRAFT', size: 100 });
  const drafts = await fetchAll(asSeller(1), { status: 'DRAFT', size: 100 });
  t.true(drafts.body.content.length > 0);
  t.true(
    drafts.body.content.every(
      (p: { sellerId: number; status: string }) => p.sellerId === sellers[1].id && p.status === 'DRAFT',
    ),
  );
  await check(t, asSeller(1), { sellerId: sellers[2].id, status: 'DRAFT' }); // nobody else's drafts
  t.is((await fetchAll(asSeller(1), { sellerId: sellers[2].id, status: 'DRAFT' })).body.totalElements, 0);
  await check(t, { role: 'ADMIN', token: admin.token }, { size: 100 });
  await check(t, { role: 'ADMIN', token: admin.token }, { status: 'DRAFT', size: 100 });
  for (const viewer of [anon(), { role: 'BUYER', token: buyer.token } as Viewer]) {
    t.is((await fetchAll(viewer, { status: 'DRAFT' })).body.totalElements, 0);
  }
  for (const viewer of [anon(), asSeller(0), { role: 'ADMIN', token: admin.token } as Viewer]) {
    t.is((await fetchAll(viewer, { status: 'DELETED' })).body.totalElements, 0);
    const everything = await fetchAll(viewer, { size: 100, page: 0 });
    t.false(everything.body.content.some((p: { status: string }) => p.status === 'DELETED'));
  }
});

test('query validation: 400 VALIDATION_ERROR naming the parameter', async (t) => {
  const cases: Array<[string, string]> = [
    ['size=0', 'query.size'],
    ['size=101', 'query.size'],
    ['size=abc', 'query.size'],
    ['page=-1', 'query.page'],
    ['page=1.5', 'query.page'],
    ['sort=name,asc', 'query.sort'],
    ['sort=price,up', 'query.sort'],
    ['sort=id,desc', 'query.sort'],
    ['minPrice=abc', 'query.minPrice'],
    ['maxPrice=-1', 'query.maxPrice'],
    ['minPrice=1.234', 'query.minPrice'],
    ['minPrice=10&maxPrice=5', 'query.minPrice'],
    ['status=GONE', 'query.status'],
    ['categoryId=x', 'query.categoryId'],
    ['sellerId=0', 'query.sellerId'],
    ['unknown=1', 'query.unknown'],
    ['keyword=a&keyword=b', 'query.keyword'],
    ['status=ON_SALE&status=DRAFT', 'query.status'],
  ];
  for (const [qs, field] of cases) {
    const res = await app.request('GET', `/api/v1/products?${qs}`);
    t.is(res.status, 400, qs);
    t.is(res.body.code, 'VALIDATION_ERROR', qs);
    t.true(
      res.body.errors.some((e: { field: string }) => e.field === field),
      `${qs} -> ${JSON.stringify(res.body.errors)}`,
    );
  }
});

test('each product in the list has the full product JSON', async (t) => {
  const res = await fetchAll(anon(), { size: 1 });
  const p = res.body.content[0];
  const r = rows.find((x) => x.id === p.id)!;
  t.like(p, {
    sellerId: r.sellerId,
    categoryId: r.categoryId,
    name: r.name,
    price: r.priceCents / 100,
    status: r.status,
    salesCount: r.salesCount,
    images: [],
  });
  t.is(p.createdAt, r.createdAt.toISOString());
});
