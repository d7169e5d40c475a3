// A seller's PATCH of catalog fields and stock is one transaction, run in the product's actor: when the stock
// write fails, the name and price are not saved either, and the product is announced all the same (a write whose
// answer was lost may have been applied). A stock write, a catalog write or a DELETE whose answer was lost is
// announced before the error reaches the seller, so no cached detail (here or on a peer) keeps the old values.
import test from 'ava';
import { createCategoryService } from '../../lib/categories/category-service';
import { ServiceUnavailableError } from '../../lib/errors';
import { createEventBus } from '../../lib/events';
import { createProductService } from '../../lib/products/product-service';
import { createSellerQuotas } from '../../lib/products/seller-quotas';
import { createStockWrites, type StockWrites } from '../../lib/products/stock-writes';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

/** The product service on the app's database, with the given stock writes; `announced` lists its events. */
function serviceWithStockWrites(stockWrites: StockWrites) {
  const events = createEventBus();
  const service = createProductService({
    db: app.db,
    events,
    categories: createCategoryService({ db: app.db, events }),
    stockWrites,
    quotas: createSellerQuotas(app.config),
    images: { purgeDeletedProduct: async () => 0 },
    logger: app.logger,
    listCacheEntries: 100,
  });
  const announced: number[][] = [];
  events.on('productsChanged', ({ productIds }) => {
    announced.push([...productIds]);
  });
  return { service, announced };
}

for (const [label, failure] of [
  ['the inventory is busy (503)', () => new ServiceUnavailableError('Inventory busy')],
  ['a database error', () => new Error('Connection lost: The server closed the connection.')],
] as const) {
  test(`a PATCH whose stock write fails saves neither the name and price nor the stock: ${label}`, async (t) => {
    const { service, announced } = serviceWithStockWrites({
      // The edit goes along in the stock's transaction, which then fails.
      setStock: (_productId, _sellerId, _stockQuantity, along) =>
        app.db.transaction(async (trx) => {
          await along?.(trx);
          throw failure();
        }),
      softDelete: async () => {
        throw failure();
      },
    });
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id, { name: 'Old name', price: '10.00' });
    const auth = { id: seller.id, role: 'SELLER' as const };

    const before = await service.detail(productId, null);
    t.like(JSON.parse(before.document.json), { id: productId, name: 'Old name', price: 10 });

    const error = await t.throwsAsync(
      service.update(auth, productId, { name: 'New name', price: 12.5, stockQuantity: 3 }),
    );
    t.is(error?.message, failure().message, 'the stock write’s own error reaches the caller');
    const row = await app.db('products').where('id', productId).first('name', 'price', 'stock_quantity');
    t.like(
      { name: row.name, price: Number(row.price), stock: Number(row.stock_quantity) },
      { name: 'Old name', price: 10, stock: 10 },
      'nothing was saved',
    );
    t.like(JSON.parse((await service.detail(productId, null)).document.json), {
      id: productId,
      name: 'Old name',
      price: 10,
      stockQuantity: 10,
    });
    t.deepEqual(announced, [[productId]], 'announced all the same');
  });
}

test.serial(
  'PATCH of name, price and stock whose stock UPDATE fails in the database: 503, and nothing of it saved',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id, {
      name: 'Old name',
      price: '10.00',
      stockQuantity: 100,
    });
    // The real service (actor inventory): its stock UPDATE fails as a lost connection would, before it runs.
    const failStock = (query: { sql?: string }) => {
      if (
        /^update [`"]products[`"] set [`"]status[`"]/i.test(query.sql ?? '') &&
        /stock_quantity/.test(query.sql ?? '')
      )
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    };
    app.db.on('query', failStock);
    let res;
    try {
      res = await app.request('PATCH', `/api/v1/products/${productId}`, {
        token: seller.token,
        body: { name: 'Renamed', price: 99.99, stockQuantity: 777 },
      });
    } finally {
      app.db.off('query', failStock);
    }
    t.is(res.status, 503, res.text);
    t.like(res.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
    const read = await app.request('GET', `/api/v1/products/${productId}`);
    t.like(read.body, { name: 'Old name', price: 10, stockQuantity: 100 });
    // And the same PATCH afterwards writes all of it.
    const again = await app.request('PATCH', `/api/v1/products/${productId}`, {
      token: seller.token,
      body: { name: 'Renamed', price: 99.99, stockQuantity: 777 },
    });
    t.is(again.status, 200, again.text);
    t.like(again.body, { name: 'Renamed', price: 99.99, stockQuantity: 777 });
  },
);

test('a stock-only PATCH whose write was applied but whose answer was lost is announced: the detail shows the new stock', async (t) => {
  // As when the actor's re-read after the write fails, or a forwarded write's reply times out.
  const guarded = createStockWrites(app.db);
  const { service, announced } = serviceWithStockWrites({
    setStock: async (productId, sellerId, stockQuantity) => {
      await guarded.setStock(productId, sellerId, stockQuantity);
      throw new ServiceUnavailableError('No answer from the owner of the product');
    },
    softDelete: guarded.softDelete,
  });
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 10 });
  const auth = { id: seller.id, role: 'SELLER' as const };

  t.like(JSON.parse((await service.detail(productId, null)).document.json), { stockQuantity: 10 });
  await t.throwsAsync(service.update(auth, productId, { stockQuantity: 3 }), {
    instanceOf: ServiceUnavailableError,
  });
  t.like(JSON.parse((await service.detail(productId, null)).document.json), {
    id: productId,
    stockQuantity: 3,
  });
  t.deepEqual(announced, [[productId]]);
});

test('a DELETE whose soft delete was applied but whose answer was lost is announced: the detail is 404 at once', async (t) => {
  const guarded = createStockWrites(app.db);
  const { service, announced } = serviceWithStockWrites({
    setStock: guarded.setStock,
    softDelete: async (productId, sellerId) => {
      await guarded.softDelete(productId, sellerId);
      throw new ServiceUnavailableError('No answer from the owner of the product');
    },
  });
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 10 });
  const auth = { id: seller.id, role: 'SELLER' as const };

  t.like(JSON.parse((await service.detail(productId, null)).document.json), {
    id: productId,
    status: 'ON_SALE',
  });
  await t.throwsAsync(service.remove(auth, productId), { instanceOf: ServiceUnavailableError });
  t.is((await app.db('products').where('id', productId).first('status')).status, 'DELETED');
  await t.throwsAsync(service.detail(productId, null), { message: `Product ${productId} not found` });
  t.deepEqual(announced, [[productId]]);
});

test.serial(
  'a PATCH whose catalog write was applied but whose answer was lost is announced: the detail shows the new name',
  async (t) => {
    const { service, announced } = serviceWithStockWrites(createStockWrites(app.db));
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id, { name: 'Old name' });
    const auth = { id: seller.id, role: 'SELLER' as const };
    t.like(JSON.parse((await service.detail(productId, null)).document.json), { name: 'Old name' });
    // The UPDATE is applied; its answer is lost on the way back (knex's query-response event runs before it).
    const lose = (_response: unknown, query: { sql?: string }) => {
      if (query.sql?.startsWith('update') && query.sql.includes('`products`'))
        throw new Error('Connection lost');
    };
    app.db.on('query-response', lose);
    try {
      await t.throwsAsync(service.update(auth, productId, { name: 'New name' }));
    } finally {
      app.db.off('query-response', lose);
    }
    t.is((await app.db('products').where('id', productId).first('name')).name, 'New name');
    t.like(JSON.parse((await service.detail(productId, null)).document.json), { name: 'New name' });
    t.deepEqual(announced, [[productId]]);
  },
);
