// An order placement chosen by InnoDB as a deadlock victim decides again and answers 201, once, in both inventory
// modes: actor mode's group commit turns the deadlock into RetryPlacement for every request of the batch, and the
// transactional mode runs its transaction again. The deadlock is real (test/helpers/deadlocks.ts): the rival holds
// the buyer's member row; the placement deducts the product's stock (and holds its row), then inserts the order,
// whose foreign key waits for the buyer's row; the rival then asks for the product's row. SQLite has one writer and
// no deadlocks. In actor mode every request of the deadlocked batch decides again: the last test holds a first batch
// back (a plain lock wait) while two requests queue behind it, so the deadlock hits a batch of two.
import test from 'ava';
import { openRival } from '../helpers/deadlocks';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { carries, updatesProducts, watchQueries } from '../helpers/queries';
import { address, eventually, placeOrder, productRow, world } from './order-fixtures';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

const apps: Partial<Record<'actor' | 'transactional', TestApp>> = {};
test.before(async () => {
  if (DB_KIND !== 'mysql') return;
  apps.actor = await startTestApp({ env: { INVENTORY_MODE: 'actor' } });
  apps.transactional = await startTestApp({ env: { INVENTORY_MODE: 'transactional' } });
});
test.after.always(async () => {
  await apps.actor?.close();
  await apps.transactional?.close();
});

/** The response, or a failure when none came within `ms` (a request left hanging). */
async function within<T>(response: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      response,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no response within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

for (const mode of ['actor', 'transactional'] as const) {
  mysqlOnly(
    `${mode} mode: a placement chosen as deadlock victim decides again and answers 201, once`,
    async (t) => {
      const app = apps[mode]!;
      const { buyer, seller, product } = await world(app);
      const productId = await product({ name: 'Contested lamp', price: '7.25', stockQuantity: 5 });
      const deductions = watchQueries(app.db, (q) => updatesProducts(q) && carries(q, productId));
      const rival = await openRival(app.config.database);
      try {
        await rival.trx.raw('SELECT id FROM members WHERE id = ? FOR UPDATE', [buyer.id]);
        const placing = placeOrder(app, buyer.token, [{ productId, quantity: 2 }]);
        await rival.blocks(placing);
        // The cycle closes here; this returns only once the placement's transaction was rolled back.
        const [rows] = await rival.trx.raw(
          'SELECT stock_quantity, sales_count FROM products WHERE id = ? FOR UPDATE',
          [productId],
        );
        t.like(rows[0], { stock_quantity: 5, sales_count: 0 }, "the victim's deduction was rolled back");
        await rival.trx.rollback();

        const res = await within(placing);
        t.is(res.status, 201, res.text);
        t.is(res.body.orders.length, 1);
        const [order] = res.body.orders;
        t.like(order, { buyerId: buyer.id, status: 'PENDING', totalAmount: 14.5, shippingAddress: address });
        t.like(order.items, [
          {
            productId,
            sellerId: seller.id,
            productName: 'Contested lamp',
            productPrice: 7.25,
            quantity: 2,
            subtotal: 14.5,
          },
        ]);
        t.is(order.items.length, 1);
        t.is(deductions.count(), 2, 'the deduction ran twice: the rolled-back one and the retry');
        // Written once: one order, one item, two units off the stock.
        const orders = await app.db('orders').where('buyer_id', buyer.id).select('id', 'order_number');
        t.deepEqual(
          orders.map((row) => ({ id: row.id, orderNumber: row.order_number })),
          [{ id: order.id, orderNumber: order.orderNumber }],
        );
        t.is(Number((await app.db('order_items').where('product_id', productId).count({ n: '*' }))[0].n), 1);
        t.deepEqual(await productRow(app, productId), { stock: 3, status: 'ON_SALE', salesCount: 2 });
        // The actor's view (actor mode) counted it once too: the remaining 3 units sell, a 4th does not.
        const rest = await placeOrder(app, buyer.token, [{ productId, quantity: 3 }]);
        t.is(rest.status, 201, rest.text);
        const more = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]);
        t.is(more.status, 409);
        t.is(more.body.code, 'INSUFFICIENT_STOCK');
        t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 5 });
      } finally {
        deductions.stop();
        await rival.end();
      }
    },
  );
}

mysqlOnly(
  'actor mode: every request of a deadlocked batch decides again and is answered 201, once',
  async (t) => {
    const app = apps.actor!;
    const { buyer: plugBuyer, seller, product } = await world(app);
    const other = await world(app);
    const third = await world(app);
    const [first, second] = [other.buyer, third.buyer];
    const plugProduct = await product({ stockQuantity: 5 });
    const productId = await product({ name: 'Contested chair', price: '3.00', stockQuantity: 6 });
    const { inventory } = app.bundle.services;
    // The product's actor is loaded now: no read (which waits for a batch in flight) is needed to decide it later.
    t.is((await placeOrder(app, plugBuyer.token, [{ productId, quantity: 1 }])).status, 201);
    const deductions = watchQueries(app.db, (q) => updatesProducts(q) && carries(q, productId));
    const plug = await openRival(app.config.database);
    const rival = await openRival(app.config.database);
    try {
      // A batch held back by a lock wait (no cycle): the next requests queue behind it and form the next batch.
      await plug.trx.raw('SELECT id FROM members WHERE id = ? FOR UPDATE', [plugBuyer.id]);
      const plugged = placeOrder(app, plugBuyer.token, [{ productId: plugProduct, quantity: 1 }]);
      await plug.blocks(plugged);
      // One row per statement: over a list, a small table may be scanned, which would wait for the plug's row.
      for (const buyer of [first, second])
        await rival.trx.raw('SELECT id FROM members WHERE id = ? FOR UPDATE', [buyer.id]);
      const placing = [
        placeOrder(app, first.token, [{ productId, quantity: 2 }]),
        placeOrder(app, second.token, [{ productId, quantity: 1 }]),
      ];
      // Both decided (reserved in the actor) and queued behind the held batch.
      await eventually(async () => inventory.inspect(productId)?.reserved === 3, 5000);
      await plug.trx.rollback();
      t.is((await within(plugged)).status, 201);
      // The batch of both deducts and waits for a buyer's row; the rival asks for the product's row: the cycle.
      await rival.blocks(Promise.all(placing));
      const [rows] = await rival.trx.raw('SELECT stock_quantity FROM products WHERE id = ? FOR UPDATE', [
        productId,
      ]);
      t.is(rows[0].stock_quantity, 5, "the victim batch's deduction was rolled back");
      await rival.trx.rollback();

      const [one, two] = await Promise.all(placing.map((response) => within(response)));
      t.is(one.status, 201, one.text);
      t.is(two.status, 201, two.text);
      const item = { productId, sellerId: seller.id, productName: 'Contested chair', productPrice: 3 };
      t.like(one.body.orders[0], { buyerId: first.id, totalAmount: 6, items: [{ ...item, quantity: 2 }] });
      t.like(two.body.orders[0], { buyerId: second.id, totalAmount: 3, items: [{ ...item, quantity: 1 }] });
      t.is(one.body.orders.length + two.body.orders.length, 2);
      t.is(deductions.count(), 2, 'one batch of both rolled back, one batch of both committed');
      for (const buyer of [first, second])
        t.is(Number((await app.db('orders').where('buyer_id', buyer.id).count({ n: '*' }))[0].n), 1);
      t.deepEqual(await productRow(app, productId), { stock: 2, status: 'ON_SALE', salesCount: 4 });
      t.like(inventory.inspect(productId), { stock: 2, reserved: 0 });
    } finally {
      deductions.stop();
      await plug.end();
      await rival.end();
    }
  },
);
