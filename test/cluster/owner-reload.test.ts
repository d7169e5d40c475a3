// Stock given back (a cancellation) or written (a seller's stock PATCH) on an instance that does not own the product:
// the instances whose actors decide it re-read before the client hears back, so an order placed right after is
// judged on the new stock. Here the two instances share no change events (no bridge between their buses), and their
// actors trust a view they read for a minute (100 ms in the service), so they can learn of the change only from
// that request: without it, the deciding actor still holds the old stock and refuses the order.
// Real NATS (two cluster nodes in this process), the database under test, the real order writer.
import test from 'ava';
import type { Cluster } from '../../lib/cluster/cluster';
import { createActorInventory } from '../../lib/inventory/actor-inventory';
import { createClusteredInventory } from '../../lib/inventory/clustered-inventory';
import type { StockChange, StockWriter } from '../../lib/inventory/inventory';
import { createOrderWriter } from '../../lib/orders/order-writer';
import { startTestApp, type TestApp } from '../helpers/harness';
import { address, productRow, world } from '../orders/order-fixtures';
import { cleanup, natsTest, startNode, uniquePrefix, untilOwns } from './cluster-fixtures';

const SHARDS = 4;

interface Instance {
  node: Cluster;
  inventory: ReturnType<typeof createClusteredInventory>;
}

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ logLevel: 'error' });
});
test.after.always(async () => {
  await app?.close();
});

/** Two cluster nodes, each with the clustered inventory the service builds, and nothing shared but NATS requests. */
async function withTwoInstances(run: (a: Instance, b: Instance) => Promise<void>): Promise<void> {
  const prefix = uniquePrefix('owner-reload');
  const writer = createOrderWriter() as StockWriter<unknown, unknown>;
  const instances: Instance[] = [];
  try {
    for (const id of ['a', 'b']) {
      const node = await startNode(prefix, id, { CLUSTER_SHARDS: String(SHARDS) });
      const local = createActorInventory({
        db: app.db,
        logger: app.logger,
        idleMs: 60_000,
        freshMs: 60_000,
        announce: async () => {},
      });
      const inventory = createClusteredInventory({
        local,
        router: node,
        writers: [writer],
        changedElsewhere: async () => {},
        logger: app.logger,
      });
      node.serve(({ payload }) => inventory.handle(payload));
      node.onShardLost((shard) => void inventory.shardLost(shard));
      await node.start();
      instances.push({ node, inventory });
    }
    for (const { node } of instances) await untilOwns(node, SHARDS / 2, 10_000);
    await run(instances[0], instances[1]);
  } finally {
    await Promise.allSettled(instances.map(({ inventory }) => inventory.stop()));
    await cleanup(
      prefix,
      instances.map(({ node }) => node),
    );
  }
}

/** A cancellation's two steps on `instance`: the restore's transaction, then its announcement. */
async function cancelOn(instance: Instance, changes: StockChange[]): Promise<void> {
  await app.db.transaction((trx) => instance.inventory.restore(trx, changes, new Date()));
  await instance.inventory.restored(changes);
}

natsTest(
  'a cancellation and a stock write on a non-owner make the owner re-read before they answer',
  async (t) => {
    await withTwoInstances(async (_owner, nonOwner) => {
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
      await cancelOn(nonOwner, [{ productId, quantity: 3 }]);
      await order(2);
      t.deepEqual(await productRow(app, productId), { stock: 1, status: 'ON_SALE', salesCount: 2 });

      // A stock write on the non-owner (as a seller's PATCH runs it there): 1 -> 4, and 4 sell at once.
      await nonOwner.inventory.changeProduct(productId, async () => {
        await app.db('products').where('id', productId).update({ stock_quantity: 4 });
      });
      await order(4);
      t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 6 });
    });
  },
);

natsTest(
  "a cart's cancellation on the owner of its second product makes the owner of its first re-read both",
  async (t) => {
    await withTwoInstances(async (a, b) => {
      const { buyer, product } = await world(app);
      const ownedBy = async (instance: Instance) => {
        for (;;) {
          const id = await product({ stockQuantity: 3, price: '10.00' });
          if (instance.node.isOwner(id)) return id;
        }
      };
      // The cart is decided on a (its first product's owner), with a's actors for both products.
      const first = await ownedBy(a);
      const second = await ownedBy(b);
      t.true(first < second);
      const cart = [
        { productId: first, quantity: 1 },
        { productId: second, quantity: 3 },
      ];
      const order = () =>
        b.inventory.place({ items: cart, details: { buyerId: buyer.id, address } }, createOrderWriter());

      await order();
      t.deepEqual(await productRow(app, second), { stock: 0, status: 'SOLD_OUT', salesCount: 3 });
      t.like(await order().catch((err: unknown) => err), { status: 409, code: 'INSUFFICIENT_STOCK' });

      // Cancelled on b, which owns the second product: a's actor of it re-reads too, and the same cart sells again.
      await cancelOn(b, cart);
      await order();
      t.deepEqual(await productRow(app, first), { stock: 2, status: 'ON_SALE', salesCount: 1 });
      t.deepEqual(await productRow(app, second), { stock: 0, status: 'SOLD_OUT', salesCount: 3 });
    });
  },
);
