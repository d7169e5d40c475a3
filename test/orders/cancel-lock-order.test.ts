// A status change that gives stock back (a buyer's cancel, the expiry) takes its locks in the order every writer
// keeps: sellers' member rows, then product rows, then the buyer's (its history and outbox rows' foreign keys lock
// those members in share mode). The group commit with buyer caps locks the product, then the buyer; an image
// upload locks its seller, then the product. Out of that order two of them wait on each other and InnoDB rolls
// one back (a whole batch of orders, an upload answered 503, or the cancel). MariaDB only: SQLite has one writer.
import test, { type ExecutionContext } from 'ava';
import { openRival } from '../helpers/deadlocks';
import { createMember, createProduct } from '../helpers/factories';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { watchQueries } from '../helpers/queries';
import { address } from './order-fixtures';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

let app: TestApp;
test.before(async () => {
  // The expiry is on (a day, swept only when a test asks) for the sweep's test.
  if (DB_KIND === 'mysql')
    app = await startTestApp({
      env: { ORDER_PENDING_EXPIRY_SECONDS: '86400', ORDER_EXPIRY_SWEEP_SECONDS: '86400' },
    });
});
test.after.always(async () => {
  await app?.close();
});

/** A seller's product (stock 5) and a buyer's PENDING order of 1 unit of it. */
async function pendingOrder(t: ExecutionContext, target: TestApp) {
  const seller = await createMember(target, 'SELLER');
  const buyer = await createMember(target, 'BUYER');
  const productId = await createProduct(target, seller.id, { stockQuantity: 5 });
  const placed = await target.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
  });
  t.is(placed.status, 201, placed.text);
  return { seller, buyer, productId, orderId: placed.body.orders[0].id as number };
}

mysqlOnly(
  "a cancel waiting for the product row holds no lock on the buyer: the group commit's order (product, then buyer) cannot deadlock with it",
  async (t) => {
    const { buyer, productId, orderId } = await pendingOrder(t, app);
    const transitions = watchQueries(app.db, (q) => /^update `orders` set `status`/i.test(q.sql));
    const rival = await openRival(app.config.database);
    try {
      // The rival is a batch of the group commit: it holds the product row and will ask for the buyer's.
      await rival.trx.raw('SELECT id FROM products WHERE id = ? FOR UPDATE', [productId]);
      const cancel = app.request('POST', `/api/v1/orders/${orderId}/cancel`, { token: buyer.token });
      await rival.blocks(cancel);
      // With the buyer's row locked by the waiting cancel this would be a deadlock (and the cancel, the
      // lighter transaction, rolled back and run again).
      await rival.trx.raw('SELECT id FROM members WHERE id = ? FOR UPDATE', [buyer.id]);
      await rival.trx.rollback();
      const res = await cancel;
      t.is(res.status, 200, res.text);
      t.is(res.body.status, 'CANCELLED');
      t.is(transitions.count(), 1, 'the cancel ran once: it was never a deadlock victim');
      const product = await app.db('products').where('id', productId).first('stock_quantity');
      t.is(Number(product.stock_quantity), 5, 'the stock came back once');
    } finally {
      transitions.stop();
      await rival.end();
    }
  },
);

mysqlOnly(
  "an expiry waiting for the seller's member row holds no product lock: an upload's order (seller, then product) cannot deadlock with it",
  async (t) => {
    const { seller, productId, orderId } = await pendingOrder(t, app);
    const transitions = watchQueries(app.db, (q) => /^update `orders` set `status`/i.test(q.sql));
    const rival = await openRival(app.config.database);
    try {
      // The rival is an image upload of the seller: it holds the seller's member row and will ask for the product.
      await rival.trx.raw('SELECT id FROM members WHERE id = ? FOR UPDATE', [seller.id]);
      const sweep = app.bundle.services.orderExpiry!.sweepOnce(new Date(Date.now() + 2 * 86_400_000));
      await rival.blocks(sweep);
      await rival.trx.raw('SELECT id FROM products WHERE id = ? FOR UPDATE', [productId]);
      await rival.trx.rollback();
      t.true((await sweep).includes(orderId));
      t.is(transitions.count(), 1, 'the expiry ran once: it was never a deadlock victim');
      const order = await app.db('orders').where('id', orderId).first('status');
      t.is(order.status, 'CANCELLED');
      const product = await app.db('products').where('id', productId).first('stock_quantity');
      t.is(Number(product.stock_quantity), 5, 'the stock came back once');
    } finally {
      transitions.stop();
      await rival.end();
    }
  },
);

mysqlOnly(
  'an order whose row another transaction holds past the lock wait does not end the sweep: the next order still expires',
  async (t) => {
    const quick = await startTestApp({
      env: {
        ORDER_PENDING_EXPIRY_SECONDS: '86400',
        ORDER_EXPIRY_SWEEP_SECONDS: '86400',
        DB_STATEMENT_TIMEOUT_MS: '1000', // statements and lock waits of 1 s
      },
    });
    t.teardown(() => quick.close());
    const { orderId: held } = await pendingOrder(t, quick);
    const { orderId: next } = await pendingOrder(t, quick);
    const rival = await openRival(quick.config.database);
    try {
      await rival.trx.raw('SELECT id FROM orders WHERE id = ? FOR UPDATE', [held]);
      const expired = await quick.bundle.services.orderExpiry!.sweepOnce(
        new Date(Date.now() + 2 * 86_400_000),
      );
      t.deepEqual(expired, [next]);
    } finally {
      await rival.end();
    }
    const statuses = await quick.db('orders').whereIn('id', [held, next]).orderBy('id').pluck('status');
    t.deepEqual(statuses, ['PENDING', 'CANCELLED']);
  },
);
