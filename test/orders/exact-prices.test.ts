// Exact prices (issue 11, item 3): an order is charged the price and name of the catalog version its
// product was judged on, and the guarded stock UPDATE requires that version still to hold. So no order
// accepted after a seller's edit answered 200 is charged the old price or name: inside one process, when
// another instance edited the product (no event reaches this one), and while orders run in parallel.
// Both inventory modes, both databases.
import test from 'ava';
import { createProductRepository } from '../../lib/products/product-repository';
import { createStockWrites } from '../../lib/products/stock-writes';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { countQueries, updatesProducts } from '../helpers/queries';
import { placeOrder, productRow } from './order-fixtures';

type Mode = 'actor' | 'transactional';
const MODES: Mode[] = ['actor', 'transactional'];
const apps: Partial<Record<Mode, TestApp>> = {};
/** A second actor-mode instance on the actor app's database: its own registry, no event between them. */
let other: TestApp | undefined;

test.before(async () => {
  // Actors stay warm for the whole file: a stale view is what these tests are about.
  const env = { ACTOR_IDLE_MS: '600000', DB_POOL_MAX: '10' };
  apps.actor = await startTestApp({ env: { ...env, INVENTORY_MODE: 'actor' } });
  apps.transactional = await startTestApp({ env: { ...env, INVENTORY_MODE: 'transactional' } });
  other = await startTestApp({ env: { ...env, INVENTORY_MODE: 'actor' }, database: apps.actor.database });
});
test.after.always(async () => {
  await other?.close();
  await apps.actor?.close();
  await apps.transactional?.close();
});

async function catalogVersion(app: TestApp, productId: number): Promise<number> {
  const row = await app.db('products').where('id', productId).first('catalog_version');
  return Number(row.catalog_version);
}

/** The one line of a created order: what it was charged. */
function charged(res: ApiResponse): { name: string; price: number } {
  const [order] = res.body.orders;
  const [item] = order.items;
  return { name: item.productName, price: item.productPrice };
}

function expectCreated(
  t: { is: (a: unknown, b: unknown, m?: string) => void; deepEqual: (a: unknown, b: unknown) => void },
  res: ApiResponse,
  expected: { name: string; price: number },
  quantity = 1,
): void {
  t.is(res.status, 201, JSON.stringify(res.body));
  t.deepEqual(charged(res), expected);
  t.is(res.body.orders[0].totalAmount, expected.price * quantity);
}

async function buyers(app: TestApp, n: number): Promise<TestMember[]> {
  return Promise.all(Array.from({ length: n }, () => createMember(app, 'BUYER')));
}

/** Units of the product in orders charged each (name, price) pair, keyed `name@price`. */
async function unitsByCharge(app: TestApp, productId: number): Promise<Record<string, number>> {
  const rows = (await app
    .db('order_items')
    .where('product_id', productId)
    .groupBy('product_name', 'product_price')
    .select('product_name', 'product_price')
    .sum({ units: 'quantity' })) as Array<{
    product_name: string;
    product_price: string | number;
    units: unknown;
  }>;
  return Object.fromEntries(
    rows.map((row) => [`${row.product_name}@${Number(row.product_price)}`, Number(row.units)]),
  );
}

test.serial(
  'the repository decides: seller catalog edits bump the catalog version, stock writes do not',
  async (t) => {
    const app = apps.actor!;
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
    const repository = createProductRepository(app.db);
    const stockWrites = createStockWrites(app.db);
    t.is(await catalogVersion(app, productId), 1);

    t.true(await stockWrites.setStock(productId, seller.id, 0)); // SOLD_OUT follows the stock: not an edit
    t.true(await stockWrites.setStock(productId, seller.id, 8));
    t.is(await catalogVersion(app, productId), 1);
    t.is(await repository.updateLive(productId, seller.id, {}), null, 'an empty edit writes nothing');
    t.is(await catalogVersion(app, productId), 1, 'no catalog column set: no bump');
    t.is(await repository.updateLive(productId, seller.id, { price: 11 }), 1);
    t.is(await catalogVersion(app, productId), 2);
    t.is(await repository.updateLive(productId, seller.id, { name: 'Renamed', description: 'New' }), 1);
    t.is(await catalogVersion(app, productId), 3, 'one bump per edit, whatever it sets');
    t.true(await stockWrites.softDelete(productId, seller.id));
    t.is(await catalogVersion(app, productId), 4);
  },
);

test.serial(
  'through the API: a stock-only PATCH, an order and its cancellation keep the version; price, status and DELETE bump it',
  async (t) => {
    const app = apps.actor!;
    const seller = await createMember(app, 'SELLER');
    const [buyer] = await buyers(app, 1);
    const productId = await createProduct(app, seller.id, { stockQuantity: 5, price: '10.00' });
    const patch = (body: Record<string, unknown>) =>
      app.request('PATCH', `/api/v1/products/${productId}`, { token: seller.token, body });

    const stock = await patch({ stockQuantity: 7 });
    t.is(stock.status, 200);
    t.like(stock.body, { id: productId, stockQuantity: 7, price: 10, status: 'ON_SALE' });
    t.is(await catalogVersion(app, productId), 1);

    const order = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }]);
    expectCreated(t, order, { name: stock.body.name, price: 10 }, 2);
    const cancel = await app.request('POST', `/api/v1/orders/${order.body.orders[0].id}/cancel`, {
      token: buyer.token,
    });
    t.is(cancel.status, 200);
    t.is(cancel.body.status, 'CANCELLED');
    t.is(await catalogVersion(app, productId), 1);

    const price = await patch({ price: 12.5 });
    t.is(price.status, 200);
    t.like(price.body, { price: 12.5, stockQuantity: 7 });
    t.is(await catalogVersion(app, productId), 2);
    const draft = await patch({ status: 'DRAFT' });
    t.is(draft.status, 200);
    t.is(draft.body.status, 'DRAFT');
    t.is(await catalogVersion(app, productId), 3);
    const deleted = await app.request('DELETE', `/api/v1/products/${productId}`, { token: seller.token });
    t.is(deleted.status, 204);
    t.is(await catalogVersion(app, productId), 4);
  },
);

for (const mode of MODES) {
  test.serial(
    `[${mode}] after a PATCH of price and name answered 200, every order (sequential and parallel) is charged the new ones`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const people = await buyers(app, 5);
      const productId = await createProduct(app, seller.id, {
        stockQuantity: 100,
        price: '10.00',
        name: 'Old lamp',
      });
      // The actor (actor mode) is warm with the old view.
      expectCreated(t, await placeOrder(app, people[0].token, [{ productId, quantity: 1 }]), {
        name: 'Old lamp',
        price: 10,
      });
      const patch = await app.request('PATCH', `/api/v1/products/${productId}`, {
        token: seller.token,
        body: { price: 12.5, name: 'New lamp' },
      });
      t.is(patch.status, 200);
      t.like(patch.body, { name: 'New lamp', price: 12.5, stockQuantity: 99 });
      const fresh = { name: 'New lamp', price: 12.5 };
      for (let i = 0; i < 3; i++)
        expectCreated(t, await placeOrder(app, people[i].token, [{ productId, quantity: 2 }]), fresh, 2);
      const parallel = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          placeOrder(app, people[i % 5].token, [{ productId, quantity: 1 }]),
        ),
      );
      for (const res of parallel) expectCreated(t, res, fresh);
      t.deepEqual(await productRow(app, productId), { stock: 81, status: 'ON_SALE', salesCount: 19 });
    },
  );

  test.serial(
    `[${mode}] edited by another instance (SQL bumping the catalog version, no event): the order is charged the new price and name`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const [buyer] = await buyers(app, 1);
      const productId = await createProduct(app, seller.id, {
        stockQuantity: 10,
        price: '10.00',
        name: 'Before',
      });
      expectCreated(t, await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]), {
        name: 'Before',
        price: 10,
      });
      // What another instance's PATCH writes (product-repository.ts withCatalogVersion); no event reaches us.
      await app
        .db('products')
        .where('id', productId)
        .update({ price: '15.00', name: 'After', catalog_version: app.db.raw('catalog_version + 1') });

      const { result: first, count: productUpdates } = await countQueries(app.db, updatesProducts, () =>
        placeOrder(app, buyer.token, [{ productId, quantity: 2 }]),
      );
      expectCreated(t, first, { name: 'After', price: 15 }, 2);
      // Actor mode: the guard refused the stale decision, the actor re-read, the order decided again.
      // Transactional mode reads under lock: one UPDATE.
      t.is(productUpdates, mode === 'actor' ? 2 : 1);
      expectCreated(t, await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]), {
        name: 'After',
        price: 15,
      });
      t.deepEqual(await productRow(app, productId), { stock: 6, status: 'ON_SALE', salesCount: 4 });
      t.deepEqual(await unitsByCharge(app, productId), { 'Before@10': 1, 'After@15': 3 });
    },
  );
}

test.serial(
  '[actor] a PATCH answered 200 by another instance on the same database: this instance charges the new price and name',
  async (t) => {
    const app = apps.actor!;
    const seller = await createMember(app, 'SELLER');
    const [buyer] = await buyers(app, 1);
    const productId = await createProduct(app, seller.id, {
      stockQuantity: 10,
      price: '10.00',
      name: 'Here',
    });
    expectCreated(t, await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]), {
      name: 'Here',
      price: 10,
    });
    t.like(app.bundle.services.inventory.inspect(productId), { stock: 9, reserved: 0 });
    const patch = await other!.request('PATCH', `/api/v1/products/${productId}`, {
      token: seller.token,
      body: { price: 7.25, name: 'There' },
    });
    t.is(patch.status, 200);
    t.like(patch.body, { name: 'There', price: 7.25 });
    expectCreated(
      t,
      await placeOrder(app, buyer.token, [{ productId, quantity: 3 }]),
      { name: 'There', price: 7.25 },
      3,
    );
    t.deepEqual(await productRow(app, productId), { stock: 6, status: 'ON_SALE', salesCount: 4 });
  },
);

for (const mode of MODES) {
  test.serial(
    `[${mode}] parallel orders while a PATCH changes price and name: none sent after its 200 is charged the old ones; stock is conserved`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const people = await buyers(app, 8);
      const productId = await createProduct(app, seller.id, {
        stockQuantity: 50,
        price: '10.00',
        name: 'Old',
      });
      const order = (i: number) => placeOrder(app, people[i % 8].token, [{ productId, quantity: 1 }]);
      const before = Array.from({ length: 20 }, (_, i) => order(i));
      const patch = await app.request('PATCH', `/api/v1/products/${productId}`, {
        token: seller.token,
        body: { price: 20, name: 'New' },
      });
      t.is(patch.status, 200);
      t.like(patch.body, { name: 'New', price: 20 });
      const after = await Promise.all(Array.from({ length: 20 }, (_, i) => order(i)));
      const during = await Promise.all(before);
      for (const res of after) expectCreated(t, res, { name: 'New', price: 20 });
      for (const res of during) {
        t.is(res.status, 201);
        // Never a mix: the name and the price come from one catalog version.
        t.true(
          ['Old@10', 'New@20'].includes(`${charged(res).name}@${charged(res).price}`),
          JSON.stringify(charged(res)),
        );
      }
      const units = await unitsByCharge(app, productId);
      t.is((units['Old@10'] ?? 0) + (units['New@20'] ?? 0), 40);
      t.deepEqual(
        Object.keys(units).filter((key) => key !== 'Old@10' && key !== 'New@20'),
        [],
      );
      t.deepEqual(await productRow(app, productId), { stock: 10, status: 'ON_SALE', salesCount: 40 });
    },
  );

  test.serial(
    `[${mode}] parallel orders while another instance edits the price: exactly the units sold before its commit are charged the old price`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const people = await buyers(app, 8);
      const productId = await createProduct(app, seller.id, {
        stockQuantity: 60,
        price: '10.00',
        name: 'Old',
      });
      // Warm the actor with the old view.
      expectCreated(t, await placeOrder(app, people[0].token, [{ productId, quantity: 1 }]), {
        name: 'Old',
        price: 10,
      });
      const orders = Array.from({ length: 40 }, (_, i) =>
        placeOrder(app, people[i % 8].token, [{ productId, quantity: 1 }]),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      // Another instance's edit; under its row lock it reads how many units were sold before it commits.
      const soldBeforeEdit = await app.db.transaction(async (trx) => {
        await trx('products')
          .where('id', productId)
          .update({ price: '30.00', name: 'New', catalog_version: trx.raw('catalog_version + 1') });
        return Number((await trx('products').where('id', productId).first('sales_count')).sales_count);
      });
      const later = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          placeOrder(app, people[i % 8].token, [{ productId, quantity: 1 }]),
        ),
      );
      for (const res of later) expectCreated(t, res, { name: 'New', price: 30 });
      for (const res of await Promise.all(orders)) {
        t.is(res.status, 201);
        t.true(['Old@10', 'New@30'].includes(`${charged(res).name}@${charged(res).price}`));
      }
      const units = await unitsByCharge(app, productId);
      // An order charged the old price had its deduction committed before the edit (it is in sales_count
      // at the edit); every later one, the new price.
      t.is(units['Old@10'] ?? 0, soldBeforeEdit);
      t.is(units['New@30'] ?? 0, 51 - soldBeforeEdit);
      t.deepEqual(await productRow(app, productId), { stock: 9, status: 'ON_SALE', salesCount: 51 });
    },
  );
}
