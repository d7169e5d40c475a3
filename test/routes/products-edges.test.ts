// Edges of the product rules that the main product tests leave open (found by mutation testing): who gets
// 404 rather than 403 for a deleted product, and the exact bounds of the lists.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let otherSeller: TestMember;
let categoryId: number;
test.before(async () => {
  app = await startTestApp();
  [seller, otherSeller] = await Promise.all([createMember(app, 'SELLER'), createMember(app, 'SELLER')]);
  categoryId = await createCategory(app);
});
test.after.always(async () => {
  await app?.close();
});

test('a deleted product is 404, not 403, for another seller too (PATCH and DELETE); nothing changes', async (t) => {
  const id = await createProduct(app, seller.id, { categoryId, name: 'Gone', status: 'DELETED' });
  const path = `/api/v1/products/${id}`;
  assertError(
    t,
    await app.request('PATCH', path, { body: { name: 'Mine now' }, token: otherSeller.token }),
    404,
    'NOT_FOUND',
    path,
  );
  assertError(t, await app.request('DELETE', path, { token: otherSeller.token }), 404, 'NOT_FOUND', path);
  const row = await app.db('products').where({ id }).first();
  t.is(row.name, 'Gone');
  t.is(row.status, 'DELETED');
});

test('cursor list: a page that ends exactly at the last product says so (hasNext false, nextCursor null)', async (t) => {
  const lister = await createMember(app, 'SELLER');
  const base = Date.now() - 60_000;
  const ids: number[] = [];
  for (let i = 0; i < 3; i++)
    ids.push(await createProduct(app, lister.id, { categoryId, createdAt: new Date(base + i * 1000) }));
  const newestFirst = [...ids].reverse();
  const page = (query: string) =>
    app.request('GET', `/api/v1/products/cursor?sellerId=${lister.id}&${query}`);

  const whole = await page('limit=3');
  t.is(whole.status, 200);
  t.deepEqual(
    whole.body.content.map((p: { id: number }) => p.id),
    newestFirst,
  );
  t.like(whole.body, { hasNext: false, nextCursor: null, size: 3 });

  const first = await page('limit=2');
  t.is(first.status, 200);
  t.like(first.body, { hasNext: true, size: 2 });
  t.is(typeof first.body.nextCursor, 'string');
  const last = await page(`limit=1&cursor=${first.body.nextCursor}`);
  t.is(last.status, 200);
  t.deepEqual(
    last.body.content.map((p: { id: number }) => p.id),
    [newestFirst[2]],
  );
  t.like(last.body, { hasNext: false, nextCursor: null, size: 1 });
});

test('cursor list: minPrice above maxPrice is 400 VALIDATION_ERROR naming minPrice, as on the offset list', async (t) => {
  for (const path of ['/api/v1/products/cursor', '/api/v1/products']) {
    const res = await app.request('GET', `${path}?minPrice=10&maxPrice=5`);
    assertError(t, res, 400, 'VALIDATION_ERROR', path);
    t.deepEqual(res.body.errors, [
      { field: 'query.minPrice', message: 'minPrice must not be greater than maxPrice' },
    ]);
  }
  const equal = await app.request('GET', '/api/v1/products/cursor?minPrice=10&maxPrice=10');
  t.is(equal.status, 200);
});
