// An order is answered by what its transaction did: when the announcement of its stock change fails after the
// COMMIT (a cache bus that throws), the committed order is still the answer, in both inventory modes, and the
// failure is logged (also when, in cluster mode, the instance that forwarded the order cannot drop its copies).
// Answering an error would make the client place it again.
import test from 'ava';
import type { CatalogHooks } from '../../lib/events';
import { createActorInventory } from '../../lib/inventory/actor-inventory';
import { createInventory } from '../../lib/inventory/create-inventory';
import type { StockRequest, StockWriter } from '../../lib/inventory/inventory';
import { createTransactionalInventory } from '../../lib/inventory/transactional-inventory';
import { createOrderWriter, type OrderDetails } from '../../lib/orders/order-writer';
import { startTestApp, type TestApp } from '../helpers/harness';
import { address, productRow, world } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ logLevel: 'error' });
});
test.after.always(async () => {
  await app?.close();
});

for (const mode of ['transactional', 'actor'] as const) {
  test.serial(
    `${mode}: a failed announcement after COMMIT still answers the committed order, and a committed cancellation`,
    async (t) => {
      const deps = {
        db: app.db,
        logger: app.logger,
        announce: () => Promise.reject(new Error('the bus is down')),
      };
      const inventory =
        mode === 'actor'
          ? createActorInventory({ ...deps, idleMs: 60_000 })
          : createTransactionalInventory(deps);
      try {
        const { buyer, product } = await world(app);
        const p = await product({ stockQuantity: 5 });
        const [order] = await inventory.place(
          { items: [{ productId: p, quantity: 2 }], details: { buyerId: buyer.id, address } },
          createOrderWriter(),
        );
        t.like(order, { buyerId: buyer.id, status: 'PENDING', items: [{ productId: p, quantity: 2 }] });
        t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 2 });
        t.true(app.logs.lines.some((line) => line.includes('Announcing the committed stock changes failed')));

        // A cancellation's restore committed: its announcement failing is logged, never the caller's error (the
        // buyer would be told the cancel failed, and its retry would get 409 ORDER_NOT_CANCELLABLE).
        const changes = [{ productId: p, quantity: 2 }];
        await app.db.transaction((trx) => inventory.restore(trx, changes, new Date()));
        await t.notThrowsAsync(inventory.restored(changes));
        t.deepEqual(await productRow(app, p), { stock: 5, status: 'ON_SALE', salesCount: 0 });
        t.true(app.logs.lines.some((line) => line.includes('Announcing the restored stock failed')));
      } finally {
        await inventory.stop();
      }
    },
  );
}

test.serial(
  'cluster mode: when dropping the copies of an order forwarded to its owner fails, the answer stands',
  async (t) => {
    // The owner's side is this process's own actor inventory behind the router (NATS is the cluster tests'
    // part); the instance that forwarded the order drops its copies before answering, and that fails here.
    const local = createActorInventory({
      db: app.db,
      logger: app.logger,
      idleMs: 60_000,
      announce: async () => {},
    });
    const router = {
      isOwner: () => false,
      shardOf: () => 0,
      request: <T>(_productId: number, payload: unknown) =>
        local.place(
          (payload as { request: StockRequest<OrderDetails> }).request,
          createOrderWriter(),
        ) as Promise<T>,
    };
    const inventory = createInventory({
      config: { ...app.config, inventoryMode: 'actor' },
      db: app.db,
      logger: app.logger,
      catalog: {
        productsChanged: () => Promise.reject(new Error('the cache bus is down')),
        onProductsChanged: () => undefined,
        onCachesStale: () => undefined,
      } as unknown as CatalogHooks,
      cluster: router,
      writers: [createOrderWriter() as StockWriter<unknown, unknown>],
    });
    try {
      const { buyer, product } = await world(app);
      const p = await product({ stockQuantity: 5 });
      const [order] = await inventory.place(
        { items: [{ productId: p, quantity: 1 }], details: { buyerId: buyer.id, address } },
        createOrderWriter(),
      );
      t.like(order, { buyerId: buyer.id, status: 'PENDING' });
      t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 1 });
      t.true(
        app.logs.lines.some((line) =>
          line.includes('Dropping the copies of products changed on their owner failed'),
        ),
      );
    } finally {
      await inventory.stop();
      await local.stop();
    }
  },
);
