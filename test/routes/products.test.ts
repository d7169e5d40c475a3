// Product create/edit/delete, the status rules, visibility of the detail, its cache and HTTP caching.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError, ISO_MS } from '../helpers/assertions';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let otherSeller: TestMember;
let buyer: TestMember;
let admin: TestMember;
let categoryId: number;
test.before(async () => {
  app = await startTestApp();
  [seller, otherSeller, buyer, admin] = await Promise.all([
    createMember(app, 'SELLER'),
    createMember(app, 'SELLER'),
    createMember(app, 'BUYER'),
    createMember(app, 'ADMIN'),
  ]);
  categoryId = await createCategory(app);
});
test.after.always(async () => {
  await app?.close();
});

const newProduct = (overrides: Record<string, unknown> = {}) => ({
  categoryId,
  name: 'Walnut desk',
  description: 'Solid walnut',
  price: 249.9,
  stockQuantity: 3,
  ...overrides,
});

const post = (body: unknown, token = seller.token) =>
  app.request('POST', '/api/v1/products', { body, token });
const patch = (id: number, body: unknown, token = seller.token) =>
  app.request('PATCH', `/api/v1/products/${id}`, { body, token });
const get = (id: number, token?: string) => app.request('GET', `/api/v1/products/${id}`, { token });

test('POST /products: 201 with the product JSON of API.md (price as a 2-decimal number, status ON_SALE by default)', async (t) => {
  const res = await post(newProduct({ name: '  Walnut desk  ' }));
  t.is(res.status, 201, JSON.stringify(res.body));
  const p = res.body;
  t.deepEqual(Object.keys(p).sort(), [
    'categoryId',
    'createdAt',
    'description',
    'id',
    'images',
    'name',
    'price',
    'salesCount',
    'sellerId',
    'status',
    'stockQuantity',
    'updatedAt',
  ]);
  t.like(p, {
    sellerId: seller.id,
    categoryId,
    name: 'Walnut desk',
    description: 'Solid walnut',
    price: 249.9,
    stockQuantity: 3,
    status: 'ON_SALE',
    salesCount: 0,
    images: [],
  });
  t.regex(p.createdAt, ISO_MS);
  t.regex(p.updatedAt, ISO_MS);
  const row = await app.db('products').where({ id: p.id }).first();
  t.is(String(Number(row.price).toFixed(2)), '249.90');
  const detail = await get(p.id);
  t.is(detail.status, 200);
  t.deepEqual(detail.body, p);
});

test('POST /products: DRAFT stays DRAFT; ON_SALE with stock 0 is SOLD_OUT; money keeps its cents exactly', async (t) => {
  const draft = await post(newProduct({ status: 'DRAFT', stockQuantity: 0 }));
  t.is(draft.body.status, 'DRAFT');
  const soldOut = await post(newProduct({ stockQuantity: 0, price: 19.99 }));
  t.is(soldOut.body.status, 'SOLD_OUT');
  t.is(soldOut.body.price, 19.99);
  const big = await post(newProduct({ price: 9999999999.99 }));
  t.is(big.status, 201);
  t.is(big.body.price, 9999999999.99);
});

test('price: large valid 2-decimal prices are accepted exactly (create and PATCH); 3 decimals are 400', async (t) => {
  for (const price of [1234567890.12, 134217854.11]) {
    const created = await post(newProduct({ price }));
    t.is(created.status, 201, `${price} -> ${JSON.stringify(created.body)}`);
    t.is(created.body.price, price);
    t.is((await get(created.body.id)).body.price, price);
    const edited = await patch(created.body.id, { price });
    t.is(edited.status, 200, JSON.stringify(edited.body));
    t.is(edited.body.price, price);
  }
  for (const price of [1234567890.125, 0.30000000000000004]) {
    const res = await post(newProduct({ price }));
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.deepEqual(res.body.errors, [{ field: 'price', message: 'price must have at most 2 decimals' }]);
  }
});

test('POST /products validation: each bad field is named in a 400 VALIDATION_ERROR', async (t) => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ price: 0 }, 'price'],
    [{ price: -1 }, 'price'],
    [{ price: 1.234 }, 'price'],
    [{ price: '10.00' }, 'price'],
    [{ price: 10_000_000_000 }, 'price'],
    [{ stockQuantity: -1 }, 'stockQuantity'],
    [{ stockQuantity: 1.5 }, 'stockQuantity'],
    [{ stockQuantity: '3' }, 'stockQuantity'],
    [{ name: '  ' }, 'name'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ status: 'SOLD_OUT' }, 'status'],
    [{ status: 'DELETED' }, 'status'],
    [{ categoryId: 0 }, 'categoryId'],
    [{ sellerId: 5 }, 'sellerId'],
    [{ salesCount: 5 }, 'salesCount'],
  ];
  for (const [overrides, field] of cases) {
    const res = await post(newProduct(overrides));
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.true(
      res.body.errors.some((e: { field: string }) => e.field === field),
      `${JSON.stringify(overrides)} -> ${JSON.stringify(res.body.errors)}`,
    );
  }
  const missing = await post({});
  assertError(t, missing, 400, 'VALIDATION_ERROR');
  t.deepEqual(missing.body.errors.map((e: { field: string }) => e.field).sort(), [
    'categoryId',
    'name',
    'price',
    'stockQuantity',
  ]);
  const unknownCategory = await post(newProduct({ categoryId: 987654 }));
  assertError(t, unknownCategory, 400, 'VALIDATION_ERROR');
  t.deepEqual(unknownCategory.body.errors, [{ field: 'categoryId', message: 'category does not exist' }]);
});

test('roles: create needs a SELLER token (401 without, 403 for buyer and admin)', async (t) => {
  assertError(
    t,
    await app.request('POST', '/api/v1/products', { body: newProduct() }),
    401,
    'UNAUTHENTICATED',
  );
  assertError(t, await post(newProduct(), buyer.token), 403, 'FORBIDDEN');
  assertError(t, await post(newProduct(), admin.token), 403, 'FORBIDDEN');
  const id = await createProduct(app, seller.id, { categoryId });
  assertError(
    t,
    await app.request('PATCH', `/api/v1/products/${id}`, { body: { name: 'x' } }),
    401,
    'UNAUTHENTICATED',
  );
  assertError(t, await patch(id, { name: 'x' }, buyer.token), 403, 'FORBIDDEN');
  assertError(t, await app.request('DELETE', `/api/v1/products/${id}`), 401, 'UNAUTHENTICATED');
  assertError(
    t,
    await app.request('DELETE', `/api/v1/products/${id}`, { token: admin.token }),
    403,
    'FORBIDDEN',
  );
  assertError(t, await get(id, 'not-a-jwt'), 401, 'INVALID_TOKEN');
});

test('ownership: another seller gets 403 on PATCH and DELETE and nothing changes; unknown id is 404', async (t) => {
  const id = await createProduct(app, seller.id, { categoryId, name: 'Mine' });
  assertError(t, await patch(id, { name: 'Stolen' }, otherSeller.token), 403, 'FORBIDDEN');
  assertError(
    t,
    await app.request('DELETE', `/api/v1/products/${id}`, { token: otherSeller.token }),
    403,
    'FORBIDDEN',
  );
  const row = await app.db('products').where({ id }).first();
  t.is(row.name, 'Mine');
  t.is(row.status, 'ON_SALE');
  assertError(t, await patch(999_999, { name: 'x' }), 404, 'NOT_FOUND');
  assertError(
    t,
    await app.request('DELETE', '/api/v1/products/999999', { token: seller.token }),
    404,
    'NOT_FOUND',
  );
  assertError(t, await get(999_999), 404, 'NOT_FOUND');
});

test('PATCH: fields change, the cached detail shows the new values at once, updatedAt moves', async (t) => {
  const created = (await post(newProduct())).body;
  const before = await get(created.id); // fills the cache
  t.is(before.body.name, 'Walnut desk');
  await new Promise((r) => setTimeout(r, 5));
  const otherCategory = await createCategory(app);
  const res = await patch(created.id, {
    name: 'Oak desk',
    price: 199.5,
    description: null,
    categoryId: otherCategory,
  });
  t.is(res.status, 200);
  t.like(res.body, {
    id: created.id,
    name: 'Oak desk',
    price: 199.5,
    description: null,
    categoryId: otherCategory,
    status: 'ON_SALE',
  });
  t.true(res.body.updatedAt > created.updatedAt);
  t.is(res.body.createdAt, created.createdAt);
  const after = await get(created.id);
  t.deepEqual(after.body, res.body);
});

test('PATCH status rules: DRAFT <-> ON_SALE, stock 0 -> SOLD_OUT, stock back -> ON_SALE, SOLD_OUT/DELETED not settable', async (t) => {
  const { id } = (await post(newProduct({ stockQuantity: 2 }))).body;
  t.is((await patch(id, { status: 'DRAFT' })).body.status, 'DRAFT');
  t.is((await patch(id, { stockQuantity: 0 })).body.status, 'DRAFT'); // a draft stays a draft
  t.is((await patch(id, { status: 'ON_SALE' })).body.status, 'SOLD_OUT'); // nothing to sell
  const restocked = await patch(id, { stockQuantity: 7 });
  t.like(restocked.body, { status: 'ON_SALE', stockQuantity: 7 });
  const emptied = await patch(id, { stockQuantity: 0, name: 'Empty now' });
  t.like(emptied.body, { status: 'SOLD_OUT', stockQuantity: 0, name: 'Empty now' });
  const both = await patch(id, { status: 'ON_SALE', stockQuantity: 4 });
  t.like(both.body, { status: 'ON_SALE', stockQuantity: 4 });
  for (const status of ['SOLD_OUT', 'DELETED', 'on_sale']) {
    const res = await patch(id, { status });
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.is(res.body.errors[0].field, 'status');
  }
  const empty = await patch(id, {});
  assertError(t, empty, 400, 'VALIDATION_ERROR');
  t.deepEqual(empty.body.errors, [{ field: 'body', message: 'at least one field must be given' }]);
  const unknown = await patch(id, { salesCount: 100 });
  assertError(t, unknown, 400, 'VALIDATION_ERROR');
  t.deepEqual(unknown.body.errors, [{ field: 'salesCount', message: 'unknown field' }]);
  assertError(t, await patch(id, { price: 12.345 }), 400, 'VALIDATION_ERROR');
  assertError(t, await patch(id, { categoryId: 424242 }), 400, 'VALIDATION_ERROR');
});

test('DELETE: 204, then 404 everywhere (detail, PATCH, DELETE) for everyone, the admin included', async (t) => {
  const { id } = (await post(newProduct())).body;
  t.is((await get(id)).status, 200); // cached before the delete
  const res = await app.request('DELETE', `/api/v1/products/${id}`, { token: seller.token });
  t.is(res.status, 204);
  t.is(res.text, '');
  t.is((await app.db('products').where({ id }).first()).status, 'DELETED');
  for (const token of [undefined, seller.token, admin.token])
    assertError(t, await get(id, token), 404, 'NOT_FOUND');
  assertError(t, await patch(id, { name: 'back' }), 404, 'NOT_FOUND');
  assertError(t, await patch(id, { stockQuantity: 3 }), 404, 'NOT_FOUND');
  assertError(
    t,
    await app.request('DELETE', `/api/v1/products/${id}`, { token: seller.token }),
    404,
    'NOT_FOUND',
  );
});

test('detail visibility: a DRAFT is 404 for anonymous, buyers and other sellers; visible to its seller and admins, privately', async (t) => {
  const id = await createProduct(app, seller.id, { categoryId, status: 'DRAFT' });
  for (const token of [undefined, buyer.token, otherSeller.token])
    assertError(t, await get(id, token), 404, 'NOT_FOUND');
  for (const token of [seller.token, admin.token]) {
    const res = await get(id, token);
    t.is(res.status, 200);
    t.is(res.body.status, 'DRAFT');
    t.is(res.headers.get('cache-control'), 'private, no-store');
  }
});

test('detail HTTP caching: public, no-cache (always revalidated) with an ETag, 304 on If-None-Match, new ETag after a change', async (t) => {
  const { id } = (await post(newProduct())).body;
  const res = await get(id);
  t.is(res.status, 200);
  t.is(res.body.id, id);
  const etag = res.headers.get('etag')!;
  // Never served from a browser or CDN copy without asking: a client's own write (an order, a PATCH)
  // must show at once; the ETag keeps the revalidation a cheap 304.
  t.is(res.headers.get('cache-control'), 'public, no-cache');
  t.regex(etag, /^"[A-Za-z0-9_-]+"$/);
  t.regex(res.headers.get('content-type') ?? '', /application\/json/);
  const notModified = await app.request('GET', `/api/v1/products/${id}`, {
    headers: { 'If-None-Match': etag },
  });
  t.is(notModified.status, 304);
  t.is(notModified.text, '');
  t.is(notModified.headers.get('etag'), etag);
  t.is(notModified.headers.get('cache-control'), 'public, no-cache');
  await patch(id, { price: 1.01 });
  const changed = await app.request('GET', `/api/v1/products/${id}`, { headers: { 'If-None-Match': etag } });
  t.is(changed.status, 200);
  t.is(changed.body.price, 1.01);
  t.not(changed.headers.get('etag'), etag);
});

test('productsChanged from another area (e.g. an order taking stock) drops the cached detail before the emitter goes on', async (t) => {
  const id = await createProduct(app, seller.id, { categoryId, stockQuantity: 5 });
  t.is((await get(id)).body.stockQuantity, 5);
  await app.db('products').where({ id }).update({ stock_quantity: 0, status: 'SOLD_OUT', sales_count: 5 });
  t.is((await get(id)).body.stockQuantity, 5, 'still the cached copy: nobody announced the change');
  await app.bundle.services.events.emit('productsChanged', { productIds: [id] });
  t.like((await get(id)).body, { stockQuantity: 0, status: 'SOLD_OUT', salesCount: 5 });
});

test('path ids: /products/abc and /products/0 are 400 (not 404/500); popular and cursor are not taken for ids', async (t) => {
  for (const path of ['/api/v1/products/abc', '/api/v1/products/0', '/api/v1/products/1.5']) {
    const res = await app.request('GET', path);
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.is(res.body.errors[0].field, 'params.productId');
  }
  t.is((await app.request('GET', '/api/v1/products/popular')).status, 200);
  t.is((await app.request('GET', '/api/v1/products/cursor')).status, 200);
});

test('public reads work without a token and with any role; a broken token is 401 INVALID_TOKEN, not ignored', async (t) => {
  const id = await createProduct(app, seller.id, { categoryId });
  const paths = [
    '/api/v1/products',
    '/api/v1/products/cursor',
    '/api/v1/products/popular',
    `/api/v1/products/${id}`,
    '/api/v1/categories',
  ];
  for (const path of paths) {
    for (const token of [undefined, buyer.token, seller.token, admin.token]) {
      t.is(
        (await app.request('GET', path, { token })).status,
        200,
        `${path} ${token ? 'with' : 'without'} token`,
      );
    }
    assertError(t, await app.request('GET', path, { token: 'garbage' }), 401, 'INVALID_TOKEN');
  }
});

test('unknown ids are not cached (each miss asks the database), a known one is (the second read asks nothing)', async (t) => {
  const reads = new Map<number, number>();
  const listener = (q: { sql: string; bindings?: unknown[] }) => {
    if (/^select \* from `products` where `id` = \?/i.test(q.sql)) {
      const productId = Number(q.bindings?.[0]);
      reads.set(productId, (reads.get(productId) ?? 0) + 1);
    }
  };
  app.db.on('query', listener);
  try {
    for (let i = 0; i < 3; i++) assertError(t, await get(888_888), 404, 'NOT_FOUND');
    t.is(reads.get(888_888), 3);
    const id = await createProduct(app, seller.id, { categoryId });
    t.is((await get(id)).status, 200);
    t.is((await get(id)).status, 200);
    t.is(reads.get(id), 1);
  } finally {
    app.db.removeListener('query', listener);
  }
});
