// Stock given back (a cancellation) or written (a seller's stock PATCH) on an instance that does not own the product:
// the owner's actor re-reads before the client hears back, so an order placed right after is judged on the new
// stock. Here the two instances share no change events (no bridge between their buses), so the owner can learn
// of the change only from that request: without it, its actor still holds the old stock and refuses the order.
// Real NATS (two cluster nodes in this process), the database under test, the real order writer.
import test from 'ava';
import type { Cluster } from '../../lib/cluster/cluster';
import { createCatalogHooks, createEventBus } from '../../lib/events';
import { createInventory } from '../../lib/inventory/create-inventory';
import type { StockWriter } from '../../lib/inventory/inventory';
import { createOrderWriter } from '../../lib/orders/order-writer';
import { startTestApp, type TestApp } from '../helpers/harness';
import { address, productRow, world } from '../orders/order-fixtures';
import { cleanup, natsTest, startNode, uniquePrefix, untilOwns } from './cluster-fixtures';

const SHARDS = 4;

interface Instance {
  node: Cluster;
  inventory: ReturnType<typeof createInventory>;
}

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ logLevel: 'error' });
});
test.after.always(async () => {
  await app?.close();
});

/** Two cluster nodes, each with the inventory the service builds for it, its own event bus and no bridge. */
async function twoInstances(prefix: string): Promise<Instance[]> {
  const writer = createOrderWriter() as StockWriter<unknown, unknown>;
  const instances: Instance[] = [];
  for (const id of ['a', 'b']) {
    const node = await startNode(prefix, id, { CLUSTER_SHARDS: String(SHARDS) });
    const inventory = createInventory({
      config: app.config,
      db: app.db,
      logger: app.logger,
      catalog: createCatalogHooks(createEventBus()),
      cluster: node,
      writers: [writer],
    });
    node.serve(({ payload }) => inventory.handle!(payload));
    node.onShardLost((shard) => void inventory.shardLost!(shard));
    await node.start();
    instances.push({ node, inventory });
  }
  for (const { node } of instances) await untilOwns(node, SHARDS / 2, 10_000);
  return instances;
}

natsTest(
  'a cancellation and a stock write on a non-owner make the owner re-read before they answer',
  async (t) => {
    const prefix = uniquePrefix('owner-reload');
    let instances: Instance[] = [];
    try {
      instances = await twoInstances(prefix);
      const [, nonOwner] = instances;
      const { buyer, product } = await world(app);
      let productId = await product({ stockQuantity: 3, price: '10.00' });
      while (nonOwner.node.isOwner(productId))
        productId = await product({ stockQuantity: 3, price: '10.00' });
      const writer = createOrderWriter();
      const order = (quantity: number) =>
        nonOwner.inventory.place(
          { items: [{ productId, quantity }], details: { buyerId: buyer.id, address } },
          writer,
        );

      // Forwarded to the owner, whose actor now holds 0.
      await order(3);
      t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 3 });
      t.like(await order(1).catch((err: unknown) => err), { status: 409, code: 'INSUFFICIENT_STOCK' });

      // A cancellation on the non-owner gives the 3 back; the next order is judged on them.
      const changes = [{ productId, quantity: 3 }];
      await app.db.transaction((trx) => nonOwner.inventory.restore(trx, changes, new Date()));
      await nonOwner.inventory.restored(changes);
      await order(2);
      t.deepEqual(await productRow(app, productId), { stock: 1, status: 'ON_SALE', salesCount: 2 });

      // A stock write on the non-owner (as a seller's PATCH runs it there): 1 -> 4, and 4 sell at once.
      await nonOwner.inventory.changeProduct(productId, async () => {
        await app.db('products').where('id', productId).update({ stock_quantity: 4 });
      });
      await order(4);
      t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 6 });
    } finally {
      await Promise.allSettled(instances.map(({ inventory }) => inventory.stop()));
      await cleanup(
        prefix,
        instances.map(({ node }) => node),
      );
    }
  },
);
