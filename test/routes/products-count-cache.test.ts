// totalElements of the offset list: counted once per filter set under concurrent load (single-flight),
// and recounted at once after a product change, so a client always sees its own write.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { readsProducts, watchQueries } from '../helpers/queries';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let categoryId: number;

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  categoryId = await createCategory(app);
  for (let i = 0; i < 30; i++) await createProduct(app, seller.id, { categoryId });
});
test.after.always(async () => {
  await app?.close();
});

const countStatements = () =>
  watchQueries(app.db, (query) => /count\(\*\)/i.test(query.sql) && readsProducts(query));

test.serial('50 concurrent list requests with one filter set count the rows once', async (t) => {
  const counter = countStatements();
  try {
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        app.request('GET', `/api/v1/products?categoryId=${categoryId}&size=5&page=${i % 6}`),
      ),
    );
    for (const res of responses) {
      t.is(res.status, 200);
      t.is(res.body.totalElements, 30);
      t.is(res.body.totalPages, 6);
    }
    t.is(counter.count(), 1);
  } finally {
    counter.stop();
  }
});

test.serial('a product created, sold out or deleted through the API is counted at once', async (t) => {
  const list = () => app.request('GET', `/api/v1/products?categoryId=${categoryId}&size=5`);
  t.is((await list()).body.totalElements, 30);

  const created = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId, name: 'Counted at once', price: 12.5, stockQuantity: 3 },
  });
  t.is(created.status, 201);
  t.is((await list()).body.totalElements, 31);

  const deleted = await app.request('DELETE', `/api/v1/products/${created.body.id}`, { token: seller.token });
  t.is(deleted.status, 204);
  const after = await list();
  t.is(after.body.totalElements, 30);
  t.false(after.body.content.some((p: { id: number }) => p.id === created.body.id));
});

test.serial('counts depend on what the viewer may see: a seller counts their own drafts', async (t) => {
  await createProduct(app, seller.id, { categoryId, status: 'DRAFT' });
  await app.bundle.services.events.emit('productsChanged', { productIds: [0] });
  const anonymous = await app.request('GET', `/api/v1/products?categoryId=${categoryId}`);
  const own = await app.request('GET', `/api/v1/products?categoryId=${categoryId}`, { token: seller.token });
  t.is(anonymous.body.totalElements, 30);
  t.is(own.body.totalElements, 31);
});
