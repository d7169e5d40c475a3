// A product row held elsewhere past the lock wait (DB_STATEMENT_TIMEOUT_MS, here 1 s) answers the orders that need
// it 503 SERVICE_UNAVAILABLE with Retry-After after one wait, in both inventory modes: the placement is not decided
// again behind the same row (20 tries of 1 s in actor mode, whose group commit would hold every other product's
// orders in the same batches too; 5 in transactional mode). A deadlock victim is still decided again at once
// (test/orders/placement-deadlock.test.ts). On MariaDB the statement's own time limit (max_statement_time, the same
// 1 s) usually ends the wait before InnoDB's lock wait does; on MySQL (no limit on UPDATEs) it is ER_LOCK_WAIT_TIMEOUT,
// and on SQLite SQLITE_BUSY: another process held the database's write lock past the busy timeout (the last tests).
// A status change (a buyer's cancel) is answered the same way, not run again 10 times.
import test from 'ava';
import { openRival } from '../helpers/deadlocks';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { RawDatabase } from '../helpers/raw-sqlite';
import { assertError } from '../helpers/assertions';
import { placeOrder, productRow, world } from './order-fixtures';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;
const sqliteOnly = DB_KIND === 'sqlite' ? test.serial : test.skip;

const apps: Partial<Record<'actor' | 'transactional', TestApp>> = {};
test.before(async () => {
  const env = { DB_STATEMENT_TIMEOUT_MS: '1000' }; // statements and lock waits of 1 s
  apps.actor = await startTestApp({ env: { ...env, INVENTORY_MODE: 'actor' } });
  apps.transactional = await startTestApp({ env: { ...env, INVENTORY_MODE: 'transactional' } });
});
test.after.always(async () => {
  await apps.actor?.close();
  await apps.transactional?.close();
});

/** The response and how long it took. */
async function timed<T>(work: Promise<T>): Promise<{ res: T; ms: number }> {
  const started = performance.now();
  const res = await work;
  return { res, ms: performance.now() - started };
}

for (const mode of ['actor', 'transactional'] as const) {
  mysqlOnly(
    `${mode} mode: a product row held past the lock wait is 503 with Retry-After after one wait, and nothing is written`,
    async (t) => {
      const app = apps[mode]!;
      const { buyer, product } = await world(app);
      const held = await product({ stockQuantity: 5 });
      const free = await product({ stockQuantity: 5 });
      // Both products' actors are loaded (actor mode), so the orders below are decided without a read.
      for (const productId of [held, free])
        t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).status, 201);
      const rival = await openRival(app.config.database);
      try {
        await rival.trx.raw('SELECT id FROM products WHERE id = ? FOR UPDATE', [held]);
        const [blocked, other] = await Promise.all([
          timed(placeOrder(app, buyer.token, [{ productId: held, quantity: 1 }])),
          timed(placeOrder(app, buyer.token, [{ productId: free, quantity: 1 }])),
        ]);
        assertError(t, blocked.res, 503, 'SERVICE_UNAVAILABLE', '/api/v1/orders');
        t.truthy(blocked.res.headers.get('retry-after'));
        t.true(blocked.ms < 4_000, `answered after ${Math.round(blocked.ms)} ms (one lock wait is 1 s)`);
        // The other product's order shared the held one's batch (503 as well) or came after it (201); either
        // way within about one wait, not held behind the row.
        t.true([201, 503].includes(other.res.status), other.res.text);
        t.true(other.ms < 4_000, `answered after ${Math.round(other.ms)} ms`);
        t.is(
          Number((await app.db('order_items').where('product_id', held).count({ n: '*' }))[0].n),
          1,
          'nothing written for the held product',
        );
      } finally {
        await rival.end();
      }
      // Released: the held product sells again, and its stock counted only the orders that were answered 201.
      const after = await placeOrder(app, buyer.token, [{ productId: held, quantity: 1 }]);
      t.is(after.status, 201, after.text);
      t.deepEqual(await productRow(app, held), { stock: 3, status: 'ON_SALE', salesCount: 2 });
    },
  );
}

for (const mode of ['actor', 'transactional'] as const) {
  sqliteOnly(
    `${mode} mode: the database's write lock held by another process past the busy timeout is 503 with Retry-After after one wait`,
    async (t) => {
      const app = apps[mode]!;
      const { buyer, product } = await world(app);
      const productId = await product({ stockQuantity: 5 });
      t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).status, 201);
      const database = app.config.database;
      if (database.client !== 'sqlite') throw new Error('SQLite expected');
      const other = new RawDatabase(database.filename);
      try {
        other.exec('BEGIN IMMEDIATE'); // the write lock, as another process's long write would hold it
        const blocked = await timed(placeOrder(app, buyer.token, [{ productId, quantity: 1 }]));
        assertError(t, blocked.res, 503, 'SERVICE_UNAVAILABLE', '/api/v1/orders');
        t.truthy(blocked.res.headers.get('retry-after'));
        t.true(blocked.ms < 4_000, `answered after ${Math.round(blocked.ms)} ms (one busy wait is 1 s)`);
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      const after = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]);
      t.is(after.status, 201, after.text);
      t.deepEqual(await productRow(app, productId), { stock: 3, status: 'ON_SALE', salesCount: 2 });
    },
  );
}

sqliteOnly(
  "a buyer's cancel while another process holds the write lock is 503 with Retry-After after one wait, and the order stays",
  async (t) => {
    const app = apps.actor!;
    const { buyer, product } = await world(app);
    const productId = await product({ stockQuantity: 5 });
    const placed = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }]);
    t.is(placed.status, 201, placed.text);
    const orderId = placed.body.orders[0].id as number;
    const cancel = () =>
      app.request('POST', `/api/v1/orders/${orderId}/cancel`, { token: buyer.token, body: {} });
    const database = app.config.database;
    if (database.client !== 'sqlite') throw new Error('SQLite expected');
    const other = new RawDatabase(database.filename);
    try {
      other.exec('BEGIN IMMEDIATE');
      const blocked = await timed(cancel());
      assertError(t, blocked.res, 503, 'SERVICE_UNAVAILABLE', `/api/v1/orders/${orderId}/cancel`);
      t.truthy(blocked.res.headers.get('retry-after'));
      t.true(blocked.ms < 4_000, `answered after ${Math.round(blocked.ms)} ms (one busy wait is 1 s)`);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    t.is((await app.db('orders').where('id', orderId).first('status')).status, 'PENDING');
    const retried = await cancel();
    t.is(retried.status, 200, retried.text);
    t.is(retried.body.status, 'CANCELLED');
    t.deepEqual(await productRow(app, productId), { stock: 5, status: 'ON_SALE', salesCount: 0 });
  },
);
