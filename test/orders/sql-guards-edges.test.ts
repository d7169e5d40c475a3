// Edges of the stock SQL (lib/inventory/stock-repository.ts) the other tests leave open: a cancellation's restore
// stops at MAX_STOCK (below it, at the crossing, and at it), driven directly and through a real cancellation; and
// the deduction guard refuses a product that left ON_SALE behind the in-memory view's back (DRAFT, SOLD_OUT,
// DELETED), per product and batched, and through an order in actor mode.
import test from 'ava';
import { MAX_STOCK, type JudgedStockChange } from '../../actors/stock-rules';
import { deductStock, deductStockBatch, restoreStock } from '../../lib/inventory/stock-repository';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { placeOrder, productRow, world } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const restore = (productId: number, quantity: number) =>
  app.db.transaction((trx) => restoreStock(trx, [{ productId, quantity }], new Date()));

test('a restore far below MAX_STOCK adds the whole quantity', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const p = await createProduct(app, seller.id, { stockQuantity: MAX_STOCK - 100, salesCount: 7 });
  await restore(p, 5);
  t.deepEqual(await productRow(app, p), { stock: MAX_STOCK - 95, status: 'ON_SALE', salesCount: 2 });
});

test('a restore that would cross MAX_STOCK stops at it; one that lands exactly on it adds all', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const crossing = await createProduct(app, seller.id, { stockQuantity: MAX_STOCK - 2, salesCount: 5 });
  await restore(crossing, 5);
  t.deepEqual(await productRow(app, crossing), { stock: MAX_STOCK, status: 'ON_SALE', salesCount: 0 });
  const landing = await createProduct(app, seller.id, { stockQuantity: MAX_STOCK - 5, salesCount: 5 });
  await restore(landing, 5);
  t.deepEqual(await productRow(app, landing), { stock: MAX_STOCK, status: 'ON_SALE', salesCount: 0 });
  // One unit short of the bound, a large restore: still the bound, SOLD_OUT is not involved.
  const oneShort = await createProduct(app, seller.id, { stockQuantity: MAX_STOCK - 1, salesCount: 1000 });
  await restore(oneShort, 1000);
  t.deepEqual(await productRow(app, oneShort), { stock: MAX_STOCK, status: 'ON_SALE', salesCount: 0 });
});

test('a restore onto a stock already at MAX_STOCK (or above it) leaves the stock as it is', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const at = await createProduct(app, seller.id, { stockQuantity: MAX_STOCK, salesCount: 3 });
  await restore(at, 3);
  t.deepEqual(await productRow(app, at), { stock: MAX_STOCK, status: 'ON_SALE', salesCount: 0 });
  // A row written above the bound before it held here keeps its units: a restore never lowers a stock.
  const above = await createProduct(app, seller.id, { stockQuantity: MAX_STOCK + 10, salesCount: 3 });
  await restore(above, 3);
  t.deepEqual(await productRow(app, above), { stock: MAX_STOCK + 10, status: 'ON_SALE', salesCount: 0 });
});

test('a cancellation after the seller raised the stock to near MAX_STOCK restores up to MAX_STOCK, and the API answers it', async (t) => {
  const { buyer, seller, product } = await world(app);
  const p = await product({ stockQuantity: 10 });
  const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 4 }]);
  t.is(placed.status, 201, placed.text);
  t.like(placed.body.orders[0], { status: 'PENDING', items: [{ productId: p, quantity: 4 }] });
  const raised = await app.request('PATCH', `/api/v1/products/${p}`, {
    token: seller.token,
    body: { stockQuantity: MAX_STOCK - 1 },
  });
  t.is(raised.status, 200, raised.text);
  t.like(raised.body, { id: p, stockQuantity: MAX_STOCK - 1, status: 'ON_SALE' });
  const cancelled = await app.request('POST', `/api/v1/orders/${placed.body.orders[0].id}/cancel`, {
    token: buyer.token,
  });
  t.is(cancelled.status, 200, cancelled.text);
  t.like(cancelled.body, { id: placed.body.orders[0].id, status: 'CANCELLED' });
  t.deepEqual(await productRow(app, p), { stock: MAX_STOCK, status: 'ON_SALE', salesCount: 0 });
  const shown = await app.request('GET', `/api/v1/products/${p}`);
  t.is(shown.status, 200, shown.text);
  t.like(shown.body, { id: p, stockQuantity: MAX_STOCK, status: 'ON_SALE', salesCount: 0 });
});

for (const status of ['DRAFT', 'SOLD_OUT', 'DELETED'] as const) {
  test(`the deduction guard refuses a ${status} product with stock, per product and batched, and changes nothing`, async (t) => {
    const seller = await createMember(app, 'SELLER');
    const onSale = await createProduct(app, seller.id, { stockQuantity: 5 });
    const left = await createProduct(app, seller.id, { stockQuantity: 9, status });
    const change = (productId: number): JudgedStockChange => ({ productId, quantity: 1, catalogVersion: 1 });
    t.deepEqual(
      await app.db.transaction((trx) => deductStock(trx, [change(left)], new Date())),
      [left],
      'per product: reported as refused',
    );
    t.deepEqual(await productRow(app, left), { stock: 9, status, salesCount: 0 });
    // Batched, alone and together with an ON_SALE product (the caller rolls back on a refusal).
    t.false(await app.db.transaction((trx) => deductStockBatch(trx, [change(left)], new Date())));
    t.deepEqual(await productRow(app, left), { stock: 9, status, salesCount: 0 });
    const together = await app.db
      .transaction(async (trx) => {
        if (!(await deductStockBatch(trx, [change(onSale), change(left)], new Date())))
          throw new Error('refused');
        return 'applied';
      })
      .catch((err: Error) => err.message);
    t.is(together, 'refused');
    t.deepEqual(await productRow(app, left), { stock: 9, status, salesCount: 0 });
    t.deepEqual(await productRow(app, onSale), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  });
}

test('actor mode: a product taken off sale in the database behind the actor is refused by the guard, nothing deducted', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 10 });
  // The actor reads the product and keeps its ON_SALE view.
  const first = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
  t.is(first.status, 201, first.text);
  // Another process takes it off sale without a catalog version bump or an announcement.
  await app.db('products').where('id', p).update({ status: 'DRAFT' });
  const refused = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]);
  // The guard refuses, the actor re-reads the product and judges again: not on sale.
  assertError(t, refused, 409, 'PRODUCT_NOT_ON_SALE', '/api/v1/orders');
  t.deepEqual(await productRow(app, p), { stock: 9, status: 'DRAFT', salesCount: 1 });
  const orders = await app.db('orders').where('buyer_id', buyer.id).count({ n: '*' }).first();
  t.is(Number(orders!.n), 1);
});
