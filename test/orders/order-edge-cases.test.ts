// Edge cases found in review: totals that would not fit DECIMAL(12,2), Idempotency-Key comparison and
// presence, and the strict (empty) body of a cancellation. Both inventory modes, both databases.
import test from 'ava';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from '../helpers/harness';
import { placeOrder, productRow, world } from './order-fixtures';

const apps: Record<string, TestApp> = {};
let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
  apps.actor = await startTestApp({ database });
  apps.transactional = await startTestApp({ database, env: { INVENTORY_MODE: 'transactional' } });
});
test.after.always(async () => {
  for (const app of Object.values(apps)) await app.close();
  await database?.drop();
});

for (const mode of ['actor', 'transactional'] as const) {
  test.serial(
    `${mode}: a total over 9,999,999,999.99 is 400 and deducts nothing; a cart placed alongside it succeeds`,
    async (t) => {
      const app = apps[mode];
      const { buyer, product } = await world(app);
      const big = await product({ price: '9999999999.99', stockQuantity: 5000 });
      const normal = await product({ price: '10.00', stockQuantity: 5 });
      const [tooBig, fine] = await Promise.all([
        placeOrder(app, buyer.token, [{ productId: big, quantity: 1000 }]),
        placeOrder(app, buyer.token, [{ productId: normal, quantity: 1 }]),
      ]);
      t.is(tooBig.status, 400);
      t.like(tooBig.body, {
        status: 400,
        code: 'VALIDATION_ERROR',
        errors: [{ field: 'orderItems', message: "an order's total must be at most 9999999999.99" }],
      });
      t.is(fine.status, 201);
      t.is((await productRow(app, big)).stock, 5000);
      t.is((await productRow(app, normal)).stock, 4);
      // The largest total that fits is accepted.
      const exact = await placeOrder(app, buyer.token, [{ productId: big, quantity: 1 }]);
      t.is(exact.status, 201);
      t.is(exact.body.orders[0].totalAmount, 9999999999.99);
      const twice = await placeOrder(app, buyer.token, [{ productId: big, quantity: 2 }]);
      t.is(twice.status, 400);
    },
  );

  test.serial(
    `${mode}: Idempotency-Keys are compared exactly: keys differing in case are two keys`,
    async (t) => {
      const app = apps[mode];
      const { buyer, product } = await world(app);
      const productId = await product({ stockQuantity: 10 });
      const first = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], {
        'Idempotency-Key': `CaseKey-${mode}`,
      });
      const second = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], {
        'Idempotency-Key': `casekey-${mode}`,
      });
      const replay = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], {
        'Idempotency-Key': `CaseKey-${mode}`,
      });
      t.is(first.status, 201);
      t.is(second.status, 201);
      t.not(second.body.orders[0].id, first.body.orders[0].id);
      t.is(second.headers.get('idempotent-replayed'), null);
      t.is(replay.status, 201);
      t.is(replay.headers.get('idempotent-replayed'), 'true');
      t.deepEqual(replay.body, first.body);
      t.is((await productRow(app, productId)).stock, 8);
    },
  );
}

test('an empty Idempotency-Key header is 400, not "no key"', async (t) => {
  const app = apps.actor;
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 10 });
  const res = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], { 'Idempotency-Key': '' });
  t.is(res.status, 400);
  t.like(res.body, { code: 'VALIDATION_ERROR', errors: [{ field: 'headers.Idempotency-Key' }] });
  t.is((await productRow(app, productId)).stock, 10);
});

test('cancel takes no body: unknown fields are 400, an empty object is fine', async (t) => {
  const app = apps.actor;
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 10 });
  const placed = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }]);
  const orderId = placed.body.orders[0].id;
  const withReason = await app.request('POST', `/api/v1/orders/${orderId}/cancel`, {
    token: buyer.token,
    body: { reason: 'x' },
  });
  t.is(withReason.status, 400);
  t.like(withReason.body, {
    code: 'VALIDATION_ERROR',
    errors: [{ field: 'reason', message: 'unknown field' }],
  });
  t.is((await productRow(app, productId)).stock, 8);
  const empty = await app.request('POST', `/api/v1/orders/${orderId}/cancel`, {
    token: buyer.token,
    body: {},
  });
  t.is(empty.status, 200);
  t.is(empty.body.status, 'CANCELLED');
  t.is((await productRow(app, productId)).stock, 10);
});

test.serial(
  'actor: an order for units another request holds but may give back waits for them, and gets them when they are given back (no 409 for units the database has)',
  async (t) => {
    const app = apps.actor;
    const { buyer, product } = await world(app);
    const productId = await product({ price: '10.00', stockQuantity: 1 });
    const { registry } = app.bundle.services.inventory as unknown as {
      registry: import('../../actors/registry').StockRegistry;
    };
    // Another request holds the one unit: a cart whose next product is still being read, say.
    const held = await registry.reserve(productId, 1);
    if (!held.ok) throw new Error(`the hold was refused: ${held.reason}`);
    let answered = false;
    const order = placeOrder(app, buyer.token, [{ productId, quantity: 1 }]).then((res) => {
      answered = true;
      return res;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.false(answered, 'the order waits while the unit is held');
    // That request is refused for its other product and gives the unit back: this order gets it.
    registry.release(held.reservation);
    const placed = await order;
    t.is(placed.status, 201, placed.text);
    t.is((await productRow(app, productId)).stock, 0);
    // Now the unit is sold: the next order is refused at once.
    const next = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]);
    t.is(next.status, 409);
    t.like(next.body, { status: 409, code: 'INSUFFICIENT_STOCK' });
  },
);

for (const mode of ['actor', 'transactional'] as const) {
  test.serial(
    `${mode}: a cancellation gives units back up to the stock's bound (1,000,000,000), never past it`,
    async (t) => {
      const app = apps[mode];
      const { buyer, seller, product } = await world(app);
      const p = await product({ stockQuantity: 10 });
      const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 5 }]);
      t.is(placed.status, 201);
      const edit = await app.request('PATCH', `/api/v1/products/${p}`, {
        token: seller.token,
        body: { stockQuantity: 1_000_000_000 },
      });
      t.is(edit.status, 200, edit.text);
      const cancelled = await app.request('POST', `/api/v1/orders/${placed.body.orders[0].id}/cancel`, {
        token: buyer.token,
      });
      t.is(cancelled.status, 200, cancelled.text);
      // Before: 1,000,000,005, over the bound the API accepts and documents for stockQuantity.
      const shown = await app.request('GET', `/api/v1/products/${p}`);
      t.like(shown.body, { stockQuantity: 1_000_000_000, status: 'ON_SALE', salesCount: 0 });
      t.deepEqual(await productRow(app, p), { stock: 1_000_000_000, status: 'ON_SALE', salesCount: 0 });
      // Below the bound every unit comes back.
      const again = await placeOrder(app, buyer.token, [{ productId: p, quantity: 3 }]);
      t.is(again.status, 201);
      await app.request('POST', `/api/v1/orders/${again.body.orders[0].id}/cancel`, { token: buyer.token });
      t.is((await productRow(app, p)).stock, 1_000_000_000);
      // A row already over the bound (written before the bound held in the restore) keeps its units.
      const over = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]);
      t.is(over.status, 201);
      await app.db('products').where('id', p).update({ stock_quantity: 1_000_000_005 });
      await app.request('POST', `/api/v1/orders/${over.body.orders[0].id}/cancel`, { token: buyer.token });
      t.is((await productRow(app, p)).stock, 1_000_000_005);
    },
  );
}
