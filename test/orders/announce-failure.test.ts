// An order is answered by what its transaction did: when the announcement of its stock change fails after the
// COMMIT (a cache bus that throws), the committed order is still the answer, in both inventory modes, and the
// failure is logged. Answering an error would make the client place it again.
import test from 'ava';
import { createActorInventory } from '../../lib/inventory/actor-inventory';
import { createTransactionalInventory } from '../../lib/inventory/transactional-inventory';
import { createOrderWriter } from '../../lib/orders/order-writer';
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
  test.serial(`${mode}: a failed announcement after COMMIT still answers the committed order`, async (t) => {
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
    } finally {
      await inventory.stop();
    }
  });
}
