// Shard ownership over real NATS KV leases: three nodes share 64 shards fairly and exactly once, close()
// hands over at once (keys deleted, not left to expire), and a node that joins later gets shards back.
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { bucketNames, type Cluster } from '../../lib/cluster/cluster';
import {
  cleanup,
  exactlyOnce,
  NATS_URL,
  natsTest,
  shareReport,
  startNode,
  uniquePrefix,
  until,
} from './cluster-fixtures';

const SHARDS = 64;

/** The shard keys and their owners as the KV bucket holds them (the source of truth). */
async function bucketOwners(prefix: string): Promise<Map<string, string>> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const kv = await new Kvm(nc).open(bucketNames(prefix).shards);
    const owners = new Map<string, string>();
    // Read through the KV API itself, independently of the lease table's own listing.
    for await (const key of await kv.keys()) {
      const entry = await kv.get(key);
      if (entry && entry.operation === 'PUT')
        owners.set(key, entry.json<{ instanceId: string }>().instanceId);
    }
    return owners;
  } finally {
    await nc.close();
  }
}

natsTest(
  'three nodes share 64 shards fairly (at most ceil(64/3) = 22 each) and each shard exactly once',
  async (t) => {
    const prefix = uniquePrefix('share');
    const nodes: Cluster[] = [];
    try {
      for (const id of ['a', 'b', 'c']) nodes.push(await startNode(prefix, `node-${id}`));
      const acquired = new Map<string, number>();
      for (const node of nodes)
        node.onShardAcquired(
          () => void acquired.set(node.instanceId, (acquired.get(node.instanceId) ?? 0) + 1),
        );
      await Promise.all(nodes.map((node) => node.start()));
      await until(
        () => exactlyOnce(nodes, SHARDS, 22),
        10_000,
        () => shareReport(nodes),
      );
      const counts = nodes.map((node) => node.ownedShards().length);
      t.is(
        counts.reduce((a, b) => a + b, 0),
        SHARDS,
      );
      t.true(
        counts.every((count) => count >= SHARDS - 2 * 22 && count <= 22),
        shareReport(nodes),
      );
      // The bucket agrees with what every node believes.
      const owners = await bucketOwners(prefix);
      t.is(owners.size, SHARDS);
      for (const node of nodes) {
        for (const shard of node.ownedShards()) t.is(owners.get(`shard-${shard}`), node.instanceId);
      }
      // isOwner is by product id: exactly one node owns any product.
      for (const productId of [1, 64, 65, 1000, 123_457]) {
        t.is(nodes.filter((node) => node.isOwner(productId)).length, 1, `product ${productId}`);
      }
      t.true([...acquired.values()].every((n) => n > 0));
    } finally {
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'close() hands every shard over at once: its keys are deleted and the others hold all 64 well before the lease TTL',
  async (t) => {
    const prefix = uniquePrefix('close');
    const nodes: Cluster[] = [];
    try {
      for (const id of ['a', 'b', 'c']) nodes.push(await startNode(prefix, `node-${id}`));
      await Promise.all(nodes.map((node) => node.start()));
      await until(
        () => exactlyOnce(nodes, SHARDS, 22),
        10_000,
        () => shareReport(nodes),
      );
      const leaving = nodes[2];
      const lost: number[] = [];
      leaving.onShardLost((shard) => void lost.push(shard));
      const had = leaving.ownedShards();
      const started = Date.now();
      await leaving.close();
      t.deepEqual(
        lost.sort((a, b) => a - b),
        had,
        'onShardLost for every shard it held',
      );
      t.deepEqual(leaving.ownedShards(), []);
      const owners = await bucketOwners(prefix);
      t.false(
        [...owners.values()].includes(leaving.instanceId),
        'no key of the leaving node is left to expire',
      );
      const rest = nodes.slice(0, 2);
      await until(
        () => exactlyOnce(rest, SHARDS, 32),
        10_000,
        () => shareReport(rest),
      );
      const elapsed = Date.now() - started;
      t.true(elapsed < 2500, `handed over in ${elapsed} ms (lease TTL 3000 ms)`);
    } finally {
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'a node that joins later gets its fair share: the others release shards down to ceil(64/3)',
  async (t) => {
    const prefix = uniquePrefix('join');
    const nodes: Cluster[] = [];
    try {
      for (const id of ['a', 'b']) nodes.push(await startNode(prefix, `node-${id}`));
      await Promise.all(nodes.map((node) => node.start()));
      await until(
        () => exactlyOnce(nodes, SHARDS, 32),
        10_000,
        () => shareReport(nodes),
      );
      const released: number[] = [];
      nodes[0].onShardLost((shard) => void released.push(shard));
      const late = await startNode(prefix, 'node-late');
      nodes.push(late);
      await late.start();
      await until(
        () => exactlyOnce(nodes, SHARDS, 22),
        10_000,
        () => shareReport(nodes),
      );
      t.true(late.ownedShards().length >= SHARDS - 2 * 22, shareReport(nodes));
      t.is(released.length, 32 - nodes[0].ownedShards().length, 'node-a released exactly what it gave up');
    } finally {
      await cleanup(prefix, nodes);
    }
  },
);
