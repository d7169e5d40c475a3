// The database away while the background passes run (pruning and the order expiry sweep, every second here):
// each failure is logged, the schedule goes on, and a pass after the database is back does the work. On
// MariaDB the service runs behind the fault suite's TCP proxy (refused connections; a connection cut at an
// order's compare-and-set, then a blackout); on SQLite another connection holds the write lock past the busy
// timeout. The database going away during a sweep ends it at that order (the next sweep takes the rest).
import test from 'ava';
import knexFactory from 'knex';
import { knexConfig } from '../../lib/db';
import { createMember, createProduct } from '../helpers/factories';
import { DB_KIND, startTestApp, testConfig, type TestApp } from '../helpers/harness';
import { until } from '../helpers/until';
import { assertNoSecrets, SMALL_DB_TIMEOUTS, startBehindProxy, taggedOrder } from '../faults/fault-fixtures';

const EXPIRY_SECONDS = 3600;
const PASSES_EVERY_SECOND = {
  PRUNE_INTERVAL_SECONDS: '1',
  ORDER_PENDING_EXPIRY_SECONDS: String(EXPIRY_SECONDS),
  ORDER_EXPIRY_SWEEP_SECONDS: '1',
};
const longAgo = () => new Date(Date.now() - 2 * EXPIRY_SECONDS * 1000);

/** An Idempotency-Key past its window (the pruner deletes it). */
const expiredKey = (buyerId: number, idemKey: string) => ({
  buyer_id: buyerId,
  idem_key: idemKey,
  request_hash: 'h'.repeat(64),
  response_status: 201,
  response_body: '[]',
  created_at: new Date(Date.now() - 60_000),
  expires_at: new Date(Date.now() - 60_000),
});

/** Lines logged since `from` that contain `text`. */
const linesWith = (app: TestApp, from: number, text: string) =>
  app.logs.lines.slice(from).filter((line) => line.includes(text));

if (DB_KIND === 'mysql') {
  test.serial(
    'MariaDB refused: failed sweeps and prune passes are logged, the schedule goes on, the work is done once it is back',
    async (t) => {
      const service = await startBehindProxy({
        env: { ...SMALL_DB_TIMEOUTS, ...PASSES_EVERY_SECOND },
        world: { buyers: 1, products: 1, stock: 10 },
      });
      t.teardown(() => service.close());
      const { app, db, proxy } = service;
      const [buyer] = service.world.buyers;
      const [productId] = service.world.initial.keys();
      const placed = await app.request('POST', '/api/v1/orders', {
        token: buyer.token,
        body: taggedOrder([{ productId, quantity: 2 }], 'outage'),
      });
      t.is(placed.status, 201, placed.text);
      const orderId: number = placed.body.orders[0].id;

      proxy.refuse();
      proxy.cutAll();
      const from = app.logs.lines.length;
      // Due now, written straight to the database (not through the proxy).
      await db('orders').where('id', orderId).update({ ordered_at: longAgo() });
      await db('idempotency_keys').insert(expiredKey(buyer.id, 'during-outage'));
      const failedTwice = () =>
        linesWith(app, from, 'Expiring pending orders failed; trying again at the next sweep').length >= 2 &&
        linesWith(app, from, 'Pruning refreshTokens failed; trying again at the next interval').length >= 2;
      await until(failedTwice, 60_000, () => app.logs.lines.slice(from).join('\n'));
      t.regex(
        linesWith(app, from, 'Pruning idempotencyKeys failed')[0],
        /\[ERROR\] \[-\] \[Pruner\] Pruning idempotencyKeys failed; trying again at the next interval$/,
      );
      t.is((await db('orders').where('id', orderId).first()).status, 'PENDING');

      proxy.pass();
      await until(
        async () =>
          (await db('orders').where('id', orderId).first()).status === 'CANCELLED' &&
          (await db('idempotency_keys').where('idem_key', 'during-outage').first()) === undefined,
        30_000,
        () => app.logs.lines.slice(-5).join('\n'),
      );
      t.is(Number((await db('products').where('id', productId).first()).stock_quantity), 10);
      t.true(linesWith(app, from, 'Expired 1 order(s) left PENDING').length === 1);
      assertNoSecrets(t, app.logs.text);
    },
  );

  test.serial(
    'MariaDB lost at an order of a sweep: the sweep ends at that order; the next sweeps expire both once it is back',
    async (t) => {
      const service = await startBehindProxy({
        env: { ...SMALL_DB_TIMEOUTS, ...PASSES_EVERY_SECOND },
        world: { buyers: 1, products: 1, stock: 10 },
      });
      t.teardown(() => service.close());
      const { app, db, proxy } = service;
      const [buyer] = service.world.buyers;
      const [productId] = service.world.initial.keys();
      const ids: number[] = [];
      for (const tag of ['first', 'second']) {
        const placed = await app.request('POST', '/api/v1/orders', {
          token: buyer.token,
          body: taggedOrder([{ productId, quantity: 1 }], tag),
        });
        t.is(placed.status, 201, placed.text);
        ids.push(placed.body.orders[0].id);
      }
      // The first order's compare-and-set never arrives: its connection is cut, and the database refuses
      // connections for longer than a pool acquire may wait.
      const cut = proxy.cutOn('update `orders` set `status`', { forward: false, blackoutMs: 4000 });
      const from = app.logs.lines.length;
      await db('orders').whereIn('id', ids).update({ ordered_at: longAgo() });
      await cut;
      await until(
        () => linesWith(app, from, `Expiring order ${ids[0]} failed`).length > 0,
        10_000,
        () => app.logs.lines.slice(from).join('\n'),
      );
      await until(
        async () =>
          (await db('orders').whereIn('id', ids).where('status', 'CANCELLED')).length === ids.length,
        30_000,
        () => app.logs.lines.slice(from).join('\n'),
      );
      t.is(linesWith(app, from, `Expiring order ${ids[0]} failed`).length, 1);
      t.deepEqual(
        linesWith(app, from, `Expiring order ${ids[1]} failed`),
        [],
        'the sweep did not go on to the next order while the database was away',
      );
      t.is(Number((await db('products').where('id', productId).first()).stock_quantity), 10);
      assertNoSecrets(t, app.logs.text);
    },
  );
} else {
  test.serial(
    'SQLite locked past the busy timeout: failed sweeps and prune passes are logged, the schedule goes on, the work is done once it is free',
    async (t) => {
      const app = await startTestApp({
        env: { ...PASSES_EVERY_SECOND, DB_STATEMENT_TIMEOUT_MS: '200' },
        logLevel: 'info',
      });
      t.teardown(() => app.close());
      const { pruner, orderExpiry } = app.bundle.services;
      const buyer = await createMember(app, 'BUYER');
      const seller = await createMember(app, 'SELLER');
      const productId = await createProduct(app, seller.id, { stockQuantity: 10 });
      const ids: number[] = [];
      for (const tag of ['first', 'second']) {
        const placed = await app.request('POST', '/api/v1/orders', {
          token: buyer.token,
          body: taggedOrder([{ productId, quantity: 1 }], tag),
        });
        t.is(placed.status, 201, placed.text);
        ids.push(placed.body.orders[0].id);
      }
      await pruner.stop();
      await orderExpiry!.stop();
      await app.db('orders').whereIn('id', ids).update({ ordered_at: longAgo() });
      await app.db('idempotency_keys').insert(expiredKey(buyer.id, 'during-lock'));

      // Another connection holds the write lock: every write of the service waits out the busy timeout.
      const other = knexFactory(knexConfig(testConfig(app.database.env).database));
      t.teardown(() => other.destroy());
      const holder = await other.transaction();
      try {
        await holder('members').where('id', buyer.id).update({ name: 'Held' });
        const from = app.logs.lines.length;
        pruner.start();
        orderExpiry!.start();
        await until(
          () =>
            linesWith(app, from, `Expiring order ${ids[0]} failed; the next sweep tries it again`).length >=
              2 &&
            linesWith(app, from, 'Pruning idempotencyKeys failed; trying again at the next interval')
              .length >= 2,
          30_000,
          () => app.logs.lines.slice(from).join('\n'),
        );
        t.regex(
          linesWith(app, from, `Expiring order ${ids[0]} failed`)[0],
          /\[ERROR\] \[-\] \[OrderExpiry\]/,
        );
        t.deepEqual(
          linesWith(app, from, `Expiring order ${ids[1]} failed`),
          [],
          'a sweep ends at the order the database did not take',
        );
        t.regex(app.logs.text, /SQLITE_BUSY/);
      } finally {
        await holder.rollback();
      }
      await until(
        async () =>
          (await app.db('orders').whereIn('id', ids).where('status', 'CANCELLED')).length === ids.length &&
          (await app.db('idempotency_keys').where('idem_key', 'during-lock').first()) === undefined,
        30_000,
        () => app.logs.lines.slice(-5).join('\n'),
      );
      t.is((await app.db('products').where('id', productId).first()).stock_quantity, 10);
      assertNoSecrets(t, app.logs.text);
    },
  );
}
