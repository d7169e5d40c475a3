// The public catalogue's list pages are cached (product-service.ts `publicList`, list-pages.ts) and replayed by
// the response memo, until a product change that may alter them: a list page must never show an older state
// than the product's detail GET. A seller's and an admin's lists (their drafts) are never served from it, and it holds a bounded number
// of pages. Serial: the tests count the statements the app runs.
import test from 'ava';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { countQueries, readsProducts } from '../helpers/queries';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';
import { address } from '../orders/order-fixtures';

let app: TestApp;
let seller: TestMember;
let buyer: TestMember;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  [seller, buyer, admin] = await Promise.all([
    createMember(app, 'SELLER'),
    createMember(app, 'BUYER'),
    createMember(app, 'ADMIN'),
  ]);
});
test.after.always(async () => {
  await app?.close();
});

/** Statements that read `products` while `run` runs (a page served from the cache or the memo reads none). */
async function productReads<T>(app: TestApp, run: () => Promise<T>): Promise<{ result: T; reads: number }> {
  const { result, count } = await countQueries(app.db, readsProducts, run);
  return { result, reads: count };
}

interface ListedProduct {
  id: number;
  name: string;
  price: number;
  stockQuantity: number;
  status: string;
  salesCount: number;
}

const listOf = (res: ApiResponse) => res.body.content as ListedProduct[];
const ids = (res: ApiResponse) => listOf(res).map((p) => p.id);

test.serial(
  'an anonymous page is read once, then served from the cache with an ETag; 304 on If-None-Match',
  async (t) => {
    const categoryId = await createCategory(app);
    const [older, newer] = [
      await createProduct(app, seller.id, { categoryId, createdAt: new Date(Date.now() - 1000) }),
      await createProduct(app, seller.id, { categoryId }),
    ];
    const path = `/api/v1/products?categoryId=${categoryId}`;
    const first = await productReads(app, () => app.request('GET', path));
    t.is(first.result.status, 200);
    t.deepEqual(ids(first.result), [newer, older]);
    t.like(first.result.body, { page: 0, size: 20, totalElements: 2, totalPages: 1, hasNext: false });
    t.true(first.reads > 0);
    const etag = first.result.headers.get('etag');
    t.regex(etag ?? '', /^"[A-Za-z0-9_-]+"$/);
    t.is(first.result.headers.get('cache-control'), 'public, no-cache');

    const again = await productReads(app, () => app.request('GET', path));
    t.is(again.reads, 0);
    t.is(again.result.status, 200);
    t.is(again.result.text, first.result.text);
    t.is(again.result.headers.get('etag'), etag);
    // The same page under another spelling of the query is the same cache entry (through Koa, not the memo).
    const respelled = await productReads(app, () =>
      app.request('GET', `/api/v1/products?page=0&categoryId=${categoryId}&sort=CREATEDAT,DESC`),
    );
    t.is(respelled.reads, 0);
    t.is(respelled.result.text, first.result.text);
    // A buyer sees the public catalogue: the same cached page.
    const asBuyer = await productReads(app, () => app.request('GET', path, { token: buyer.token }));
    t.is(asBuyer.reads, 0);
    t.is(asBuyer.result.text, first.result.text);

    const notModified = await app.request('GET', path, { headers: { 'If-None-Match': etag! } });
    t.is(notModified.status, 304);
    t.is(notModified.text, '');
  },
);

test.serial(
  'a seller’s edit (name, price), DRAFT and delete show on the very next anonymous page',
  async (t) => {
    const categoryId = await createCategory(app);
    const [a, b] = [
      await createProduct(app, seller.id, { categoryId, createdAt: new Date(Date.now() - 1000) }),
      await createProduct(app, seller.id, { categoryId }),
    ];
    const path = `/api/v1/products?categoryId=${categoryId}`;
    const list = () => app.request('GET', path);
    t.deepEqual(ids(await list()), [b, a]);
    t.deepEqual(ids(await list()), [b, a]); // cached (and replayed) now

    const edited = await app.request('PATCH', `/api/v1/products/${a}`, {
      token: seller.token,
      body: { name: 'Renamed at once', price: 42.5 },
    });
    t.is(edited.status, 200);
    const afterEdit = await list();
    t.is(afterEdit.status, 200);
    t.like(listOf(afterEdit)[1], { id: a, name: 'Renamed at once', price: 42.5 });
    t.is((await app.request('GET', `/api/v1/products/${a}`)).body.name, 'Renamed at once');

    const drafted = await app.request('PATCH', `/api/v1/products/${b}`, {
      token: seller.token,
      body: { status: 'DRAFT' },
    });
    t.is(drafted.status, 200);
    const afterDraft = await list();
    t.deepEqual(ids(afterDraft), [a]);
    t.like(afterDraft.body, { totalElements: 1, totalPages: 1 });
    t.is((await app.request('GET', `/api/v1/products/${b}`)).status, 404);

    const deleted = await app.request('DELETE', `/api/v1/products/${a}`, { token: seller.token });
    t.is(deleted.status, 204);
    const afterDelete = await list();
    t.deepEqual(ids(afterDelete), []);
    t.like(afterDelete.body, { totalElements: 0, totalPages: 0, hasNext: false });
  },
);

test.serial(
  'an order’s stock change shows on the very next anonymous page (stock, salesCount, SOLD_OUT)',
  async (t) => {
    const categoryId = await createCategory(app);
    const productId = await createProduct(app, seller.id, { categoryId, stockQuantity: 2, price: '12.50' });
    const path = `/api/v1/products?categoryId=${categoryId}&status=ON_SALE`;
    const everything = `/api/v1/products?categoryId=${categoryId}`;
    t.like(listOf(await app.request('GET', path))[0], { id: productId, stockQuantity: 2, status: 'ON_SALE' });
    t.like(listOf(await app.request('GET', everything))[0], { id: productId, stockQuantity: 2 });

    const order = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { orderItems: [{ productId, quantity: 2 }], shippingAddress: address },
    });
    t.is(order.status, 201, JSON.stringify(order.body));

    t.deepEqual(ids(await app.request('GET', path)), []);
    const after = await app.request('GET', everything);
    t.like(listOf(after)[0], { id: productId, stockQuantity: 0, status: 'SOLD_OUT', salesCount: 2 });
    t.is((await app.request('GET', `/api/v1/products/${productId}`)).body.stockQuantity, 0);
  },
);

test.serial(
  'a cancellation that lifts SOLD_OUT shows on the very next page of a status filter (its stock change drops it)',
  async (t) => {
    const categoryId = await createCategory(app);
    const productId = await createProduct(app, seller.id, { categoryId, stockQuantity: 1 });
    const onSale = `/api/v1/products?categoryId=${categoryId}&status=ON_SALE`;
    const order = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
    });
    t.is(order.status, 201, JSON.stringify(order.body));
    t.deepEqual(ids(await app.request('GET', onSale)), []);
    t.deepEqual(ids(await app.request('GET', onSale)), []); // cached now

    const orderId = order.body.orders[0].id;
    const cancelled = await app.request('POST', `/api/v1/orders/${orderId}/cancel`, { token: buyer.token });
    t.is(cancelled.status, 200, JSON.stringify(cancelled.body));
    const after = await app.request('GET', onSale);
    t.deepEqual(ids(after), [productId]);
    t.like(listOf(after)[0], { stockQuantity: 1, status: 'ON_SALE', salesCount: 0 });
    t.like(after.body, { totalElements: 1 });
  },
);

test.serial(
  'a guard refusal (the product changed behind this process) drops every page, also those not showing it',
  async (t) => {
    const [from, to] = [await createCategory(app), await createCategory(app)];
    const productId = await createProduct(app, seller.id, { categoryId: from, stockQuantity: 5 });
    const toPath = `/api/v1/products?categoryId=${to}`;
    // The actor holds the product's view; the page of the other category is cached (empty).
    const first = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
    });
    t.is(first.status, 201, JSON.stringify(first.body));
    t.deepEqual(ids(await app.request('GET', toPath)), []);
    t.deepEqual(ids(await app.request('GET', toPath)), []);

    // Another process moves it (a catalogue edit: the version goes up) without this one hearing of it.
    await app
      .db('products')
      .where('id', productId)
      .update({ category_id: to, catalog_version: app.db.raw('catalog_version + 1') });
    const second = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
    });
    t.is(second.status, 201, JSON.stringify(second.body));
    t.deepEqual(ids(await app.request('GET', toPath)), [productId]);
  },
);

test.serial(
  'an order drops only the pages it can change: those showing the product, a status filter, the salesCount sort',
  async (t) => {
    const [orderedCategory, otherCategory] = [await createCategory(app), await createCategory(app)];
    const ordered = await createProduct(app, seller.id, { categoryId: orderedCategory, stockQuantity: 5 });
    const other = await createProduct(app, seller.id, { categoryId: otherCategory, stockQuantity: 5 });
    const paths = {
      showsIt: `/api/v1/products?categoryId=${orderedCategory}`,
      unrelated: `/api/v1/products?categoryId=${otherCategory}`,
      unrelatedByPrice: `/api/v1/products?categoryId=${otherCategory}&sort=price,asc`,
      statusFilter: `/api/v1/products?categoryId=${otherCategory}&status=ON_SALE`,
      bySales: `/api/v1/products?categoryId=${otherCategory}&sort=salesCount,desc`,
    };
    for (const path of Object.values(paths)) t.is((await app.request('GET', path)).status, 200);

    const placed = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { orderItems: [{ productId: ordered, quantity: 2 }], shippingAddress: address },
    });
    t.is(placed.status, 201, JSON.stringify(placed.body));

    const reads: Record<string, number> = {};
    const bodies: Record<string, ApiResponse> = {};
    for (const [name, path] of Object.entries(paths)) {
      const { result, reads: count } = await productReads(app, () => app.request('GET', path));
      t.is(result.status, 200);
      reads[name] = count;
      bodies[name] = result;
    }
    t.like(reads, { unrelated: 0, unrelatedByPrice: 0 });
    t.true(reads.showsIt > 0 && reads.statusFilter > 0 && reads.bySales > 0, JSON.stringify(reads));
    t.like(listOf(bodies.showsIt)[0], { id: ordered, stockQuantity: 3, salesCount: 2 });
    t.like(listOf(bodies.unrelated)[0], { id: other, stockQuantity: 5, salesCount: 0 });
    t.like(bodies.statusFilter.body, { totalElements: 1 });

    // A seller's edit of the unrelated product still drops every page, its own included.
    const edited = await app.request('PATCH', `/api/v1/products/${other}`, {
      token: seller.token,
      body: { price: 77 },
    });
    t.is(edited.status, 200);
    const afterEdit = await productReads(app, () => app.request('GET', paths.unrelated));
    t.true(afterEdit.reads > 0);
    t.like(listOf(afterEdit.result)[0], { id: other, price: 77 });
  },
);

test.serial(
  'a seller’s and an admin’s lists are never the anonymous cache’s: their drafts show, without an ETag',
  async (t) => {
    const categoryId = await createCategory(app);
    const live = await createProduct(app, seller.id, { categoryId, createdAt: new Date(Date.now() - 1000) });
    const draft = await createProduct(app, seller.id, { categoryId, status: 'DRAFT' });
    const path = `/api/v1/products?categoryId=${categoryId}`;
    t.deepEqual(ids(await app.request('GET', path)), [live]);
    t.deepEqual(ids(await app.request('GET', path)), [live]);

    const own = await app.request('GET', path, { token: seller.token });
    t.is(own.status, 200);
    t.deepEqual(ids(own), [draft, live]);
    t.is(own.body.totalElements, 2);
    t.is(own.headers.get('etag'), null);
    const byAdmin = await app.request('GET', path, { token: admin.token });
    t.deepEqual(ids(byAdmin), [draft, live]);
    t.is(byAdmin.headers.get('etag'), null);
    const drafts = await app.request('GET', `${path}&status=DRAFT`, { token: seller.token });
    t.deepEqual(ids(drafts), [draft]);

    // ... and the other way round: a seller's page does not fill the anonymous one.
    const otherCategory = await createCategory(app);
    const hidden = await createProduct(app, seller.id, { categoryId: otherCategory, status: 'DRAFT' });
    const otherPath = `/api/v1/products?categoryId=${otherCategory}`;
    t.deepEqual(ids(await app.request('GET', otherPath, { token: seller.token })), [hidden]);
    t.deepEqual(ids(await app.request('GET', otherPath)), []);
    t.deepEqual(ids(await app.request('GET', otherPath, { token: admin.token })), [hidden]);
  },
);

test.serial(
  'a change from another instance (remote productsChanged) or cachesStale ends every cached page',
  async (t) => {
    const categoryId = await createCategory(app);
    const path = `/api/v1/products?categoryId=${categoryId}`;
    const first = await createProduct(app, seller.id, { categoryId, createdAt: new Date(Date.now() - 1000) });
    t.deepEqual(ids(await app.request('GET', path)), [first]);
    // Written behind the service's back (as another instance would): the cached page still answers...
    const second = await createProduct(app, seller.id, { categoryId });
    t.deepEqual(ids(await app.request('GET', path)), [first]);
    // ... until the change is announced, as lib/cluster/app-events.ts does for another instance's write.
    await app.bundle.services.events.emit('productsChanged', { productIds: [second], origin: 'remote' });
    t.deepEqual(ids(await app.request('GET', path)), [second, first]);

    const third = await createProduct(app, seller.id, { categoryId, createdAt: new Date(Date.now() + 1000) });
    t.deepEqual(ids(await app.request('GET', path)), [second, first]);
    await app.bundle.services.events.emit('cachesStale');
    t.deepEqual(ids(await app.request('GET', path)), [third, second, first]);
  },
);

test.serial('the cache holds at most PRODUCT_LIST_CACHE_ENTRIES pages; 0 caches none', async (t) => {
  const bounded = await startTestApp({ env: { PRODUCT_LIST_CACHE_ENTRIES: '2' } });
  const uncached = await startTestApp({ env: { PRODUCT_LIST_CACHE_ENTRIES: '0' } });
  try {
    const owner = await createMember(bounded, 'SELLER');
    const categoryId = await createCategory(bounded);
    await createProduct(bounded, owner.id, { categoryId });
    const paths = [1, 2, 3].map((size) => `/api/v1/products?categoryId=${categoryId}&size=${size}`);
    for (const path of paths) t.is((await bounded.request('GET', path)).status, 200);
    const repeated = [];
    for (const path of paths)
      repeated.push((await productReads(bounded, () => bounded.request('GET', path))).reads);
    // The first two pages were kept; the third found the cache full and is read again.
    t.is(repeated[0], 0);
    t.is(repeated[1], 0);
    t.true(repeated[2] > 0);

    const other = await createMember(uncached, 'SELLER');
    const otherCategory = await createCategory(uncached);
    await createProduct(uncached, other.id, { categoryId: otherCategory });
    const path = `/api/v1/products?categoryId=${otherCategory}`;
    t.is((await uncached.request('GET', path)).status, 200);
    const again = await productReads(uncached, () => uncached.request('GET', path));
    t.is(again.result.status, 200);
    t.is(again.result.body.totalElements, 1);
    t.true(again.reads > 0);
  } finally {
    await Promise.all([bounded.close(), uncached.close()]);
  }
});
