// GET /products/popular: order, limit, single-flight on a cold cache, invalidation, HTTP caching.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { watchQueries } from '../helpers/queries';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let categoryId: number;
const onSale: Array<{ id: number; salesCount: number }> = [];

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  categoryId = await createCategory(app);
  for (let i = 0; i < 60; i++) {
    const salesCount = (i * 7) % 13; // ties on purpose
    const id = await createProduct(app, seller.id, { categoryId, salesCount });
    onSale.push({ id, salesCount });
  }
  // Never popular: not ON_SALE, however many sales.
  for (const status of ['DRAFT', 'SOLD_OUT', 'DELETED'] as const)
    await createProduct(app, seller.id, { categoryId, status, salesCount: 1000 });
});
test.after.always(async () => {
  await app?.close();
});

const expectedIds = (limit: number) =>
  [...onSale]
    .sort((a, b) => b.salesCount - a.salesCount || b.id - a.id)
    .slice(0, limit)
    .map((p) => p.id);

/** Counts the SQL statements that read the popular list. */
const countPopularQueries = () => watchQueries(app.db, (q) => /order by `sales_count` desc/i.test(q.sql));

test.serial(
  'a cold cache under 100 concurrent requests reaches the database once; all get the same body',
  async (t) => {
    await app.bundle.services.events.emit('productsChanged', { productIds: [onSale[0].id] }); // make sure it is cold
    const counter = countPopularQueries();
    try {
      const results = await Promise.all(
        Array.from({ length: 100 }, () => app.request('GET', '/api/v1/products/popular')),
      );
      t.true(results.every((r) => r.status === 200));
      t.is(new Set(results.map((r) => r.text)).size, 1);
      t.deepEqual(
        results[0].body.map((p: { id: number }) => p.id),
        expectedIds(10),
      );
      t.is(counter.count(), 1);
      await app.request('GET', '/api/v1/products/popular'); // warm: no query at all
      t.is(counter.count(), 1);
    } finally {
      counter.stop();
    }
  },
);

test.serial('order by salesCount desc, id desc, only ON_SALE; limit default 10, up to 50', async (t) => {
  for (const limit of [1, 10, 50]) {
    const res = await app.request('GET', `/api/v1/products/popular?limit=${limit}`);
    t.is(res.status, 200);
    t.deepEqual(
      res.body.map((p: { id: number }) => p.id),
      expectedIds(limit),
    );
    t.true(res.body.every((p: { status: string }) => p.status === 'ON_SALE'));
  }
  for (const limit of ['0', '51', 'x', '-3']) {
    const res = await app.request('GET', `/api/v1/products/popular?limit=${limit}`);
    t.is(res.status, 400);
    t.like(res.body, { code: 'VALIDATION_ERROR' });
    t.is(res.body.errors[0].field, 'query.limit');
  }
});

test.serial('a repeated limit (limit=1&limit=2) is 400 VALIDATION_ERROR naming query.limit', async (t) => {
  for (const qs of ['limit=1&limit=2', 'limit=3&limit=3']) {
    const res = await app.request('GET', `/api/v1/products/popular?${qs}`);
    t.is(res.status, 400, qs);
    t.like(res.body, { status: 400, code: 'VALIDATION_ERROR' });
    t.deepEqual(res.body.errors, [
      { field: 'query.limit', message: 'limit must be an integer between 1 and 50' },
    ]);
  }
});

test.serial('a product change (productsChanged) drops the cached list at once', async (t) => {
  const before = await app.request('GET', '/api/v1/products/popular?limit=3');
  const target = onSale.find((p) => !before.body.some((b: { id: number }) => b.id === p.id))!;
  await app.db('products').where({ id: target.id }).update({ sales_count: 500 });
  const stale = await app.request('GET', '/api/v1/products/popular?limit=3');
  t.deepEqual(stale.body, before.body, 'cached: the direct write was not announced');
  await app.bundle.services.events.emit('productsChanged', { productIds: [target.id] });
  const fresh = await app.request('GET', '/api/v1/products/popular?limit=3');
  t.is(fresh.body[0].id, target.id);
  t.is(fresh.body[0].salesCount, 500);
  target.salesCount = 500;
  // The seller's own PATCH goes through the same path (and is awaited before the response).
  const patched = await app.request('PATCH', `/api/v1/products/${target.id}`, {
    body: { status: 'DRAFT' },
    token: seller.token,
  });
  t.is(patched.status, 200);
  const afterDraft = await app.request('GET', '/api/v1/products/popular?limit=3');
  t.false(afterDraft.body.some((p: { id: number }) => p.id === target.id));
});

test.serial('ETag and public max-age=600; 304 on If-None-Match', async (t) => {
  const res = await app.request('GET', '/api/v1/products/popular?limit=5');
  t.is(res.headers.get('cache-control'), 'public, max-age=600');
  const etag = res.headers.get('etag')!;
  t.regex(etag, /^"[A-Za-z0-9_-]+"$/);
  const again = await app.request('GET', '/api/v1/products/popular?limit=5', {
    headers: { 'If-None-Match': etag },
  });
  t.is(again.status, 304);
  t.is(again.text, '');
  const star = await app.request('GET', '/api/v1/products/popular?limit=5', {
    headers: { 'If-None-Match': '*' },
  });
  t.is(star.status, 304);
  const other = await app.request('GET', '/api/v1/products/popular?limit=5', {
    headers: { 'If-None-Match': '"nope"' },
  });
  t.is(other.status, 200);
  t.is(other.text, res.text);
});
