// A status change that gives stock back (a buyer's cancel, the expiry) takes its locks in the order the group
// commit takes them: the product row first, then the member rows that its history and outbox rows name (their
// foreign keys lock those members in share mode). The group commit with buyer caps locks the product, then the
// buyer's member row; had the cancel locked the buyer before the product, the two would wait on each other and
// InnoDB would roll one back (a whole batch of orders, or the cancel). MariaDB only: SQLite has one writer.
import test from 'ava';
import { openRival } from '../helpers/deadlocks';
import { createMember, createProduct } from '../helpers/factories';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { watchQueries } from '../helpers/queries';
import { address } from './order-fixtures';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

let app: TestApp;
test.before(async () => {
  if (DB_KIND === 'mysql') app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

mysqlOnly(
  "a cancel waiting for the product row holds no lock on the buyer: the group commit's order (product, then buyer) cannot deadlock with it",
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const buyer = await createMember(app, 'BUYER');
    const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
    const placed = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
    });
    t.is(placed.status, 201, placed.text);
    const orderId = placed.body.orders[0].id;
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
