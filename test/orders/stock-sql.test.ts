// The SQL half of the stock rule, on both databases: guarded deductions (per product and batched), and
// the restore of a cancellation.
import test from 'ava';
import { deductStock, deductStockBatch, restoreStock } from '../../lib/inventory/stock-repository';
import type { JudgedStockChange } from '../../actors/stock-rules';
import { createMember, createProduct } from '../helpers/factories';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { countQueries, updatesProducts } from '../helpers/queries';
import { productRow } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test.serial(
  'the batched deduction updates every product in one statement, SOLD_OUT at 0, salesCount up',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const a = await createProduct(app, seller.id, { stockQuantity: 5 });
    const b = await createProduct(app, seller.id, { stockQuantity: 3 });
    let statements = 0;
    const count = (query: { sql: string }) => {
      if (/^update [`"]products[`"]/i.test(query.sql)) statements++;
    };
    app.db.on('query', count);
    const ok = await app.db.transaction((trx) =>
      deductStockBatch(
        trx,
        [
          { productId: b, quantity: 3, catalogVersion: 1 },
          { productId: a, quantity: 2, catalogVersion: 1 },
        ],
        new Date(),
      ),
    );
    app.db.off('query', count);
    t.true(ok);
    t.is(statements, 1, 'one UPDATE for both products');
    t.deepEqual(await productRow(app, a), { stock: 3, status: 'ON_SALE', salesCount: 2 });
    t.deepEqual(await productRow(app, b), { stock: 0, status: 'SOLD_OUT', salesCount: 3 });
  },
);

test('a refused guard (short stock or not ON_SALE) is reported; the caller rolls back', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const a = await createProduct(app, seller.id, { stockQuantity: 5 });
  const b = await createProduct(app, seller.id, { stockQuantity: 1 });
  const draft = await createProduct(app, seller.id, { stockQuantity: 9, status: 'DRAFT' });
  const refuse = (changes: JudgedStockChange[]) =>
    app.db
      .transaction(async (trx) => {
        if (!(await deductStockBatch(trx, changes, new Date()))) throw new Error('refused');
      })
      .then(
        () => 'applied',
        (err: Error) => err.message,
      );
  t.is(
    await refuse([
      { productId: a, quantity: 1, catalogVersion: 1 },
      { productId: b, quantity: 2, catalogVersion: 1 },
    ]),
    'refused',
  );
  t.is(await refuse([{ productId: draft, quantity: 1, catalogVersion: 1 }]), 'refused');
  t.deepEqual(await productRow(app, a), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  t.deepEqual(
    await app.db.transaction((trx) =>
      deductStock(
        trx,
        [
          { productId: a, quantity: 6, catalogVersion: 1 },
          { productId: b, quantity: 1, catalogVersion: 1 },
        ],
        new Date(),
      ),
    ),
    [a],
  );
});

test('a deduction judged on an older catalog version is refused, batched or per product', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const a = await createProduct(app, seller.id, { stockQuantity: 5 });
  const b = await createProduct(app, seller.id, { stockQuantity: 5 });
  // A seller's price edit elsewhere: version 1 -> 2.
  await app.db('products').where('id', a).update({ price: '12.00', catalog_version: 2 });
  const batch = (changes: JudgedStockChange[]) =>
    app.db
      .transaction(async (trx) => {
        if (!(await deductStockBatch(trx, changes, new Date()))) throw new Error('refused');
      })
      .then(
        () => 'applied',
        (err: Error) => err.message,
      );
  t.is(
    await batch([
      { productId: a, quantity: 1, catalogVersion: 1 },
      { productId: b, quantity: 1, catalogVersion: 1 },
    ]),
    'refused',
  );
  t.deepEqual(await productRow(app, a), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  t.deepEqual(await productRow(app, b), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  t.deepEqual(
    await app.db.transaction((trx) =>
      deductStock(trx, [{ productId: a, quantity: 1, catalogVersion: 1 }], new Date()),
    ),
    [a],
  );
  t.is(
    await batch([
      { productId: a, quantity: 1, catalogVersion: 2 },
      { productId: b, quantity: 1, catalogVersion: 1 },
    ]),
    'applied',
  );
  t.deepEqual(await productRow(app, a), { stock: 4, status: 'ON_SALE', salesCount: 1 });
  const version = await app.db('products').where('id', a).first('catalog_version');
  t.is(Number(version.catalog_version), 2, 'a deduction never bumps the catalog version');
});

test('batched deductions of different product counts each apply their own values (the text is kept per count)', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push(await createProduct(app, seller.id, { stockQuantity: 10 + i }));
  const deduct = (changes: JudgedStockChange[]) =>
    app.db.transaction((trx) => deductStockBatch(trx, changes, new Date()));
  // 3 products, then 1, then 3 again (the kept text of 3), then 2 (unsorted), each with its own quantities.
  t.true(
    await deduct(ids.slice(0, 3).map((productId, i) => ({ productId, quantity: i + 1, catalogVersion: 1 }))),
  );
  t.true(await deduct([{ productId: ids[3], quantity: 13, catalogVersion: 1 }]));
  t.true(await deduct(ids.slice(0, 3).map((productId) => ({ productId, quantity: 2, catalogVersion: 1 }))));
  t.true(
    await deduct([
      { productId: ids[2], quantity: 1, catalogVersion: 1 },
      { productId: ids[0], quantity: 4, catalogVersion: 1 },
    ]),
  );
  t.deepEqual(await Promise.all(ids.map((id) => productRow(app, id))), [
    { stock: 10 - 1 - 2 - 4, status: 'ON_SALE', salesCount: 7 },
    { stock: 11 - 2 - 2, status: 'ON_SALE', salesCount: 4 },
    { stock: 12 - 3 - 2 - 1, status: 'ON_SALE', salesCount: 6 },
    { stock: 0, status: 'SOLD_OUT', salesCount: 13 },
  ]);
});

test('restoring a cancellation gives stock and salesCount back and lifts SOLD_OUT', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const a = await createProduct(app, seller.id, { stockQuantity: 0, status: 'SOLD_OUT', salesCount: 4 });
  await app.db.transaction((trx) => restoreStock(trx, [{ productId: a, quantity: 4 }], new Date()));
  t.deepEqual(await productRow(app, a), { stock: 4, status: 'ON_SALE', salesCount: 0 });
});

test.serial(
  'a batch over several statements (SQLite: 4 + 2 + 1 products) applies each; a refusal in the last refuses it all',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) ids.push(await createProduct(app, seller.id, { stockQuantity: 10 }));
    const deduct = (changes: JudgedStockChange[]) =>
      countQueries(app.db, updatesProducts, () =>
        app.db
          .transaction(async (trx) => {
            if (!(await deductStockBatch(trx, changes, new Date()))) throw new Error('refused');
            return 'applied';
          })
          .catch((err: Error) => err.message),
      );
    const applied = await deduct(
      ids.map((productId, i) => ({ productId, quantity: i + 1, catalogVersion: 1 })),
    );
    t.is(applied.result, 'applied');
    t.is(applied.count, DB_KIND === 'mysql' ? 1 : 3);
    t.deepEqual(
      await Promise.all(ids.map((id) => productRow(app, id))),
      ids.map((_, i) => ({ stock: 10 - (i + 1), status: 'ON_SALE', salesCount: i + 1 })),
    );
    // The last product (alone in the third statement on SQLite) has 3 left: the whole batch is refused.
    t.is(
      (await deduct(ids.map((productId, i) => ({ productId, quantity: i === 6 ? 4 : 1, catalogVersion: 1 }))))
        .result,
      'refused',
    );
    t.deepEqual(
      await Promise.all(ids.map((id) => productRow(app, id))),
      ids.map((_, i) => ({ stock: 10 - (i + 1), status: 'ON_SALE', salesCount: i + 1 })),
      'rolled back: the first statements applied nothing',
    );
  },
);
