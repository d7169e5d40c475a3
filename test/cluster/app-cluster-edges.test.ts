// Edges of the service in cluster mode (two instances in this process on one MariaDB database and the real NATS;
// app-cluster.test.ts pins the main paths): a cart is placed on the owner of its LOWEST product id whatever the
// order of its items, so one cart always meets the same owner's actors and group commit. And an instance does not
// take its own announcements back from NATS as another instance's: its caches were dropped as it made the change,
// and its actors, which made it, would re-read every product they just sold. A shard handed over stops the idle
// actors of that shard only: the instance's other shards keep theirs (app-cluster.test.ts moves several shards at
// once, where each loss stopping every other shard's actors would look the same).
import { createTestDatabase, type TestApp } from '../helpers/harness';
import { address } from '../orders/order-fixtures';
import { createMember, createProduct } from '../helpers/factories';
import { readsProducts, watchQueries } from '../helpers/queries';
import { natsTest, uniquePrefix, until } from './cluster-fixtures';
import { closeWorld, productOwnedBy, sharedWorld, startInstance } from './app-world';

const withWorld = sharedWorld('app-edges');

natsTest(
  'a cart runs on the owner of its lowest product id, also when that product is not its first item',
  (t) =>
    withWorld(t, async (world) => {
      const [a, b] = world.apps;
      const low = await productOwnedBy(world, a);
      const high = await productOwnedBy(world, b);
      t.true(low < high);
      // Taken by b, which owns the cart's first item: it still runs on a, the owner of the lowest id.
      const placed = await b.request('POST', '/api/v1/orders', {
        token: world.buyer.token,
        body: {
          orderItems: [
            { productId: high, quantity: 2 },
            { productId: low, quantity: 1 },
          ],
          shippingAddress: address,
        },
      });
      t.is(placed.status, 201, placed.text);
      // a's actors decided both items; b ran nothing of it, not even for the product it owns.
      t.like(a.bundle.services.inventory.inspect(low), { stock: 9, reserved: 0 });
      t.like(a.bundle.services.inventory.inspect(high), { stock: 8, reserved: 0 });
      t.is(b.bundle.services.inventory.inspect(high), null);
      t.is(b.bundle.services.inventory.inspect(low), null);
    }),
);

natsTest(
  "an instance's own announcements do not come back to it as remote changes: its actors do not re-read what they sold",
  (t) =>
    withWorld(t, async (world) => {
      const [a] = world.apps;
      const productId = await productOwnedBy(world, a);
      const heard = { a: [] as string[], b: [] as string[] };
      const offs = (['a', 'b'] as const).map((name, i) =>
        world.apps[i].bundle.services.events.on('productsChanged', ({ productIds, origin }) => {
          if (productIds.includes(productId)) heard[name].push(String(origin));
        }),
      );
      const reads = watchQueries(a.db, readsProducts);
      try {
        const placed = await a.request('POST', '/api/v1/orders', {
          token: world.buyer.token,
          body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
        });
        t.is(placed.status, 201, placed.text);
        const readsByTheOrder = reads.count();
        // b hears it from NATS; a's own copy of that message arrives at about the same time.
        await until(
          () => heard.b.length > 0,
          1000,
          () => 'b heard nothing',
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        t.deepEqual(heard.b, ['remote']);
        t.deepEqual(heard.a, ['inventory'], 'a heard only its own local announcement');
        t.is(reads.count(), readsByTheOrder, "a's actor did not re-read the product after its own sale");
        t.like(a.bundle.services.inventory.inspect(productId), { stock: 9, reserved: 0 });
      } finally {
        reads.stop();
        offs.forEach((off) => off());
      }
    }),
);

natsTest(
  "one shard handed to a joining instance stops that shard's idle actors, and only those",
  async (t) => {
    // 3 shards: a holds all three alone; b joining makes the share 2, so exactly one shard moves to b.
    const world = {
      database: await createTestDatabase(),
      prefix: uniquePrefix('app-evict'),
      apps: [] as TestApp[],
    };
    try {
      const env = { CLUSTER_SHARDS: '3', CLUSTER_LEASE_TTL_MS: '1500', CLUSTER_RENEW_MS: '500' };
      const a = await startInstance(world, 'a', env);
      world.apps.push(a);
      const cluster = a.bundle.services.cluster!;
      t.is(cluster.ownedShards().length, 3);
      const seller = await createMember(a, 'SELLER');
      const buyer = await createMember(a, 'BUYER');
      // One product per shard, each with an idle actor on a after one order.
      const byShard = new Map<number, number>();
      while (byShard.size < 3) {
        const id = await createProduct(a, seller.id, { stockQuantity: 10, price: '10.00' });
        if (!byShard.has(cluster.shardOf(id))) byShard.set(cluster.shardOf(id), id);
      }
      for (const productId of byShard.values()) {
        const placed = await a.request('POST', '/api/v1/orders', {
          token: buyer.token,
          body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
        });
        t.is(placed.status, 201, placed.text);
        t.like(a.bundle.services.inventory.inspect(productId), { stock: 9, reserved: 0 });
      }

      const b = await startInstance(world, 'b', env);
      world.apps.push(b);
      await until(
        () => cluster.ownedShards().length === 2 && b.bundle.services.cluster!.ownedShards().length === 1,
        5000,
        () => `a owns ${cluster.ownedShards().length}, b ${b.bundle.services.cluster!.ownedShards().length}`,
      );
      const [moved] = b.bundle.services.cluster!.ownedShards();
      await until(
        () => a.bundle.services.inventory.inspect(byShard.get(moved)!) === null,
        2000,
        () => `the actor of shard ${moved}, which moved to b, is still active on a`,
      );
      for (const shard of cluster.ownedShards())
        t.like(
          a.bundle.services.inventory.inspect(byShard.get(shard)!),
          { stock: 9, reserved: 0 },
          `the actor of shard ${shard}, still a's, is kept`,
        );
    } finally {
      await closeWorld(world);
    }
  },
);
