// The actor inventory's own duties around the group commit, each pinned on both databases:
// - a request reserves its cart's products in product-id order, so two carts naming the same scarce products in
//   opposite orders never wait on each other (one takes both, the other is refused);
// - a batch the SQL guard refused gives its reservations back (the product's units are sold again afterwards);
// - a committed cancellation makes the product's actor re-read (the units it gave back are sold at once);
// - a request naming a product twice (the orders schema refuses such a cart) fails at once rather than hang.
import test from 'ava';
import { createMember, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createOrderWriter } from '../../lib/orders/order-writer';
import { address, eventually, placeOrder, productRow, world } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ env: { INVENTORY_MODE: 'actor' } });
});
test.after.always(async () => {
  await app?.close();
});

/** Answers within `ms`, or fails the test instead of hanging it (a wait-for cycle never answers). */
async function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('carts naming the same last units in opposite orders: one takes both, the other is refused, neither waits on the other', async (t) => {
  const { product } = await world(app);
  const buyers: TestMember[] = await Promise.all([createMember(app, 'BUYER'), createMember(app, 'BUYER')]);
  // Fresh products each round, so both carts meet actors that are still reading (the interleaving that turns
  // an unsorted cart into a cycle: each holds its first product's last unit and waits for the other's).
  for (let round = 0; round < 8; round++) {
    const a = await product({ stockQuantity: 1 });
    const b = await product({ stockQuantity: 1 });
    const [first, second] = await within(
      10_000,
      Promise.all([
        placeOrder(app, buyers[0].token, [
          { productId: a, quantity: 1 },
          { productId: b, quantity: 1 },
        ]),
        placeOrder(app, buyers[1].token, [
          { productId: b, quantity: 1 },
          { productId: a, quantity: 1 },
        ]),
      ]),
      `round ${round}`,
    );
    const placed = [first, second].filter((res) => res.status === 201);
    const refused = [first, second].filter((res) => res.status !== 201);
    t.is(placed.length, 1, `round ${round}: one cart placed`);
    t.is(placed[0].body.orders[0].items.length, 2);
    assertError(t, refused[0], 409, 'INSUFFICIENT_STOCK', '/api/v1/orders');
    t.deepEqual(await productRow(app, a), { stock: 0, status: 'SOLD_OUT', salesCount: 1 });
    t.deepEqual(await productRow(app, b), { stock: 0, status: 'SOLD_OUT', salesCount: 1 });
  }
});

test('a batch the SQL guard refused gives its reservations back: the units left are sold to the next order', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 3 });
  t.is((await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }])).status, 201); // the actor holds 2
  // Another process sold one of the two behind this actor's back.
  await app.db('products').where('id', p).update({ stock_quantity: 1 });
  // The actor reserves 2, the guard refuses the batch, the actor re-reads: 1 left, so the order is refused.
  const refused = await within(
    10_000,
    placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }]),
    'refused',
  );
  assertError(t, refused, 409, 'INSUFFICIENT_STOCK', '/api/v1/orders');
  // Nothing of the refused batch is still held: the one unit left is sold.
  const placed = await within(
    10_000,
    placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]),
    'placed',
  );
  t.is(placed.status, 201, placed.text);
  t.like(placed.body.orders[0], { status: 'PENDING', totalAmount: 10 });
  t.deepEqual(await productRow(app, p), { stock: 0, status: 'SOLD_OUT', salesCount: 2 });
  t.like(app.bundle.services.inventory.inspect(p), { stock: 0, reserved: 0 });
});

test("a committed cancellation makes the product's actor re-read: the unit it gave back is sold at once", async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 1 });
  const first = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
  t.is(first.status, 201);
  t.like(app.bundle.services.inventory.inspect(p), { stock: 0, reserved: 0 });
  const cancel = await app.request('POST', `/api/v1/orders/${first.body.orders[0].id}/cancel`, {
    token: buyer.token,
  });
  t.is(cancel.status, 200, cancel.text);
  t.is(cancel.body.status, 'CANCELLED');
  // No order asks for the product meanwhile: only the cancellation's news can make the actor read the unit.
  await t.notThrowsAsync(
    eventually(async () => {
      const view = app.bundle.services.inventory.inspect(p);
      return view?.status === 'ready' && view.stock === 1 && view.reserved === 0;
    }, 3000),
  );
  const again = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
  t.is(again.status, 201, again.text);
  t.deepEqual(await productRow(app, p), { stock: 0, status: 'SOLD_OUT', salesCount: 1 });
});

test('a request naming a product twice fails at once instead of waiting for its own reservation, and holds nothing', async (t) => {
  const { buyer, product } = await world(app);
  const p = await product({ stockQuantity: 5 });
  const { inventory } = app.bundle.services;
  // 3 + 4 fits the stock line by line but not together: the second line would wait for the first to settle.
  const placing = inventory.place(
    {
      items: [
        { productId: p, quantity: 3 },
        { productId: p, quantity: 4 },
      ],
      details: { buyerId: buyer.id, address },
    },
    createOrderWriter(),
  );
  const err = await within(
    2_000,
    placing.then(
      () => null,
      (failure: unknown) => failure,
    ),
    'place',
  );
  t.true(err instanceof TypeError);
  t.is((err as Error).message, 'An inventory request names each product once');
  t.like(inventory.inspect(p) ?? { reserved: 0 }, { reserved: 0 });
  // Nothing held: the five units sell.
  t.is((await placeOrder(app, buyer.token, [{ productId: p, quantity: 5 }])).status, 201);
  t.deepEqual(await productRow(app, p), { stock: 0, status: 'SOLD_OUT', salesCount: 5 });
});
