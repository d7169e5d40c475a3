// Concurrency: real parallel HTTP requests against MariaDB (SQLite runs one writer at a time, so these
// prove nothing there and are registered on MySQL only). Both inventory modes; two app instances with
// their own actor registries on one database.
import test from 'ava';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { placeOrder, productRow } from './order-fixtures';

const mysqlTest = DB_KIND === 'mysql' ? test : test.skip;

const apps: Record<'actor' | 'transactional', TestApp | undefined> = {
  actor: undefined,
  transactional: undefined,
};
test.before(async () => {
  if (DB_KIND !== 'mysql') return;
  apps.actor = await startTestApp({ env: { INVENTORY_MODE: 'actor', DB_POOL_MAX: '20' }, logLevel: 'error' });
  // 200 transactions queue on one hot row (and for 20 connections): on a busy machine that takes longer
  // than the 5 s default bounds, which would shed them as 503s; this test is about correctness, not load.
  const patient = { DB_ACQUIRE_TIMEOUT_MS: '60000', DB_STATEMENT_TIMEOUT_MS: '60000' };
  apps.transactional = await startTestApp({
    env: { INVENTORY_MODE: 'transactional', DB_POOL_MAX: '20', ...patient },
  });
});
test.after.always(async () => {
  await apps.actor?.close();
  await apps.transactional?.close();
});

async function buyers(app: TestApp, n: number): Promise<TestMember[]> {
  return Promise.all(Array.from({ length: n }, () => createMember(app, 'BUYER')));
}

async function orderedUnits(app: TestApp, productId: number, excludeCancelled = true): Promise<number> {
  const query = app
    .db('order_items')
    .join('orders', 'orders.id', 'order_items.order_id')
    .where('order_items.product_id', productId);
  if (excludeCancelled) query.whereNot('orders.status', 'CANCELLED');
  const row = await query.sum({ n: 'order_items.quantity' }).first();
  return Number(row?.n ?? 0);
}

for (const mode of ['actor', 'transactional'] as const) {
  mysqlTest(
    `[${mode}] 200 parallel orders for a stock of 50: exactly 50 succeed, stock 0, SOLD_OUT, salesCount 50`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const productId = await createProduct(app, seller.id, { stockQuantity: 50 });
      const people = await buyers(app, 20);
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          placeOrder(app, people[i % 20].token, [{ productId, quantity: 1 }]),
        ),
      );
      const created = results.filter((r) => r.status === 201);
      const refused = results.filter((r) => r.status === 409);
      t.is(created.length, 50);
      t.is(refused.length, 150);
      t.true(refused.every((r) => r.body.code === 'INSUFFICIENT_STOCK'));
      t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 50 });
      t.is(await orderedUnits(app, productId), 50);
      t.is(new Set(created.map((r) => r.body.orders[0].orderNumber)).size, 50);
    },
  );

  mysqlTest(
    `[${mode}] multi-product carts in opposite orders in parallel: no deadlock, no partial deduction`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const a = await createProduct(app, seller.id, { stockQuantity: 30 });
      const b = await createProduct(app, seller.id, { stockQuantity: 30 });
      const c = await createProduct(app, seller.id, { stockQuantity: 30 });
      const people = await buyers(app, 10);
      const carts = [
        [a, b, c],
        [c, b, a],
        [b, a, c],
        [c, a, b],
      ];
      const results = await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          placeOrder(
            app,
            people[i % 10].token,
            carts[i % 4].map((productId) => ({ productId, quantity: 1 })),
          ),
        ),
      );
      t.deepEqual(
        results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.body),
        [],
      );
      t.is(results.filter((r) => r.status === 201).length, 30);
      t.true(results.filter((r) => r.status === 409).every((r) => r.body.code === 'INSUFFICIENT_STOCK'));
      for (const id of [a, b, c]) {
        t.deepEqual(await productRow(app, id), { stock: 0, status: 'SOLD_OUT', salesCount: 30 });
        t.is(await orderedUnits(app, id), 30);
      }
    },
  );

  mysqlTest(
    `[${mode}] cancel vs SHIPPED on a CONFIRMED order: exactly one wins; stock restored at most once`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const [buyer] = await buyers(app, 1);
      const productId = await createProduct(app, seller.id, { stockQuantity: 100 });
      let cancels = 0;
      for (let round = 0; round < 12; round++) {
        const order = (await placeOrder(app, buyer.token, [{ productId, quantity: 2 }])).body.orders[0];
        await app.request('PATCH', `/api/v1/sellers/orders/${order.id}/status`, {
          token: seller.token,
          body: { status: 'CONFIRMED' },
        });
        const [cancel, ship] = await Promise.all([
          app.request('POST', `/api/v1/orders/${order.id}/cancel`, { token: buyer.token }),
          app.request('PATCH', `/api/v1/sellers/orders/${order.id}/status`, {
            token: seller.token,
            body: { status: 'SHIPPED' },
          }),
        ]);
        t.deepEqual(
          [cancel.status, ship.status].sort(),
          [200, 409],
          `round ${round} ${app.logs.lines.filter((l) => l.includes('ERROR')).join('\n')}`,
        );
        const final = (await app.request('GET', `/api/v1/orders/${order.id}`, { token: buyer.token })).body;
        if (cancel.status === 200) {
          cancels++;
          t.is(ship.body.code, 'INVALID_STATUS_TRANSITION');
          t.is(final.status, 'CANCELLED');
        } else {
          t.is(cancel.body.code, 'ORDER_NOT_CANCELLABLE');
          t.is(final.status, 'SHIPPED');
        }
        t.deepEqual(
          final.statusHistory.map((h: { to: string }) => h.to),
          ['PENDING', 'CONFIRMED', final.status],
        );
      }
      const live = await orderedUnits(app, productId);
      t.deepEqual(await productRow(app, productId), {
        stock: 100 - live,
        status: 'ON_SALE',
        salesCount: live,
      });
      t.is(live, 2 * (12 - cancels));
    },
  );

  mysqlTest(
    `[${mode}] cancel vs CONFIRMED on a PENDING order ends in a serially explainable state`,
    async (t) => {
      const app = apps[mode]!;
      const seller = await createMember(app, 'SELLER');
      const [buyer] = await buyers(app, 1);
      const productId = await createProduct(app, seller.id, { stockQuantity: 50 });
      for (let round = 0; round < 12; round++) {
        const order = (await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).body.orders[0];
        const [cancel, confirm] = await Promise.all([
          app.request('POST', `/api/v1/orders/${order.id}/cancel`, { token: buyer.token }),
          app.request('PATCH', `/api/v1/sellers/orders/${order.id}/status`, {
            token: seller.token,
            body: { status: 'CONFIRMED' },
          }),
        ]);
        // serial orders: confirm then cancel (both 200), or cancel then confirm (confirm 409)
        t.is(cancel.status, 200);
        const final = (await app.request('GET', `/api/v1/orders/${order.id}`, { token: buyer.token })).body;
        t.is(final.status, 'CANCELLED');
        const path = final.statusHistory.map((h: { to: string }) => h.to);
        if (confirm.status === 200) t.deepEqual(path, ['PENDING', 'CONFIRMED', 'CANCELLED']);
        else {
          t.is(confirm.body.code, 'INVALID_STATUS_TRANSITION');
          t.deepEqual(path, ['PENDING', 'CANCELLED']);
        }
      }
      t.deepEqual(await productRow(app, productId), { stock: 50, status: 'ON_SALE', salesCount: 0 });
    },
  );

  mysqlTest(`[${mode}] many parallel cancels of one order: one wins, stock restored once`, async (t) => {
    const app = apps[mode]!;
    const seller = await createMember(app, 'SELLER');
    const [buyer] = await buyers(app, 1);
    const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
    const order = (await placeOrder(app, buyer.token, [{ productId, quantity: 5 }])).body.orders[0];
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        app.request('POST', `/api/v1/orders/${order.id}/cancel`, { token: buyer.token }),
      ),
    );
    t.is(results.filter((r) => r.status === 200).length, 1);
    t.true(
      results
        .filter((r) => r.status !== 200)
        .every((r) => r.status === 409 && r.body.code === 'ORDER_NOT_CANCELLABLE'),
    );
    t.deepEqual(await productRow(app, productId), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  });
}

mysqlTest(
  'two app instances (own actor registries) hammering one product on one database never oversell',
  async (t) => {
    const first = apps.actor!;
    const second = await startTestApp({ database: first.database, env: { INVENTORY_MODE: 'actor' } });
    try {
      const seller = await createMember(first, 'SELLER');
      const productId = await createProduct(first, seller.id, { stockQuantity: 60 });
      const people = await buyers(first, 10);
      // warm both actors up so each instance holds its own (soon stale) view of the stock
      t.is((await placeOrder(first, people[0].token, [{ productId, quantity: 1 }])).status, 201);
      t.is((await placeOrder(second, people[1].token, [{ productId, quantity: 1 }])).status, 201);
      const results = await Promise.all(
        Array.from({ length: 160 }, (_, i) =>
          placeOrder(i % 2 ? first : second, people[i % 10].token, [{ productId, quantity: 1 }]),
        ),
      );
      t.deepEqual(
        results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.body),
        [],
      );
      t.is(results.filter((r) => r.status === 201).length, 58);
      t.deepEqual(await productRow(first, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 60 });
      t.is(await orderedUnits(first, productId), 60);
      // a cancellation on one instance is sellable on the other (its stale-low view is re-read before refusing)
      const someOrder = results.find((r) => r.status === 201)!.body.orders[0];
      const owner = people.find((p) => p.id === someOrder.buyerId)!;
      t.is(
        (await first.request('POST', `/api/v1/orders/${someOrder.id}/cancel`, { token: owner.token })).status,
        200,
      );
      await new Promise((resolve) => setTimeout(resolve, 150));
      t.is((await placeOrder(second, people[2].token, [{ productId, quantity: 1 }])).status, 201);
      t.deepEqual(await productRow(first, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 60 });
    } finally {
      await second.close();
    }
  },
);
