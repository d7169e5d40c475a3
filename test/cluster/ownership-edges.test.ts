// The edges of the fair-share rule, on 3 shards so every count is exact: a member's presence in the members
// bucket is the whole membership protocol, so a member that holds no shard yet (here a "ghost": a key the test
// keeps alive, as a starting instance's lease would be) still halves everyone's share. A node never claims past
// ceil(shards / members), gives back exactly the one shard over it when a member appears, takes it again when the
// member's lease runs out, and start() resolves only once a first node already serves every shard. And a shards
// bucket made again (NATS lost it, or someone deleted it) holds none of the leases its holders still trust: nothing
// is claimed in it for a lease TTL after a node sees it, also by a node whose members bucket never changed. Balancing
// runs twice per renewal period (each round reads the members bucket), which is what bounds a failover to the lease
// TTL plus half a period.
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { bucketNames, type Cluster } from '../../lib/cluster/cluster';
import { shardKey } from '../../lib/cluster/shards';
import { cleanup, natsTest, NATS_URL, startNode, uniquePrefix, until } from './cluster-fixtures';

const SHARDS = 3;
const ENV = { CLUSTER_SHARDS: String(SHARDS), CLUSTER_LEASE_TTL_MS: '1500', CLUSTER_RENEW_MS: '500' };

/** A member key renewed every 300 ms until stopped (then it expires with the bucket's TTL). */
async function ghostMember(prefix: string) {
  const nc: NatsConnection = await connect({ servers: NATS_URL });
  const kv: KV = await new Kvm(nc).open(bucketNames(prefix).members);
  const put = () => kv.put('ghost', JSON.stringify({ instanceId: 'ghost' }));
  await put();
  const timer = setInterval(() => void put().catch(() => undefined), 300);
  return {
    async stop() {
      clearInterval(timer);
      await nc.close();
    },
  };
}

natsTest('a first node serves every shard as soon as start() resolves', async (t) => {
  const prefix = uniquePrefix('own-first');
  const nodes: Cluster[] = [];
  try {
    const node = await startNode(prefix, 'node-a', ENV);
    nodes.push(node);
    await node.start();
    t.deepEqual(node.ownedShards(), [0, 1, 2]);
  } finally {
    await cleanup(prefix, nodes);
  }
});

natsTest(
  'a member that holds no shard yet counts: a node claims ceil(3 / 2) = 2 shards, never the third',
  async (t) => {
    const prefix = uniquePrefix('own-ghost');
    const nodes: Cluster[] = [];
    let ghost: Awaited<ReturnType<typeof ghostMember>> | undefined;
    try {
      const node = await startNode(prefix, 'node-a', ENV);
      nodes.push(node);
      ghost = await ghostMember(prefix);
      let most = 0;
      const watch = setInterval(() => (most = Math.max(most, node.ownedShards().length)), 5);
      try {
        await node.start();
        t.is(node.ownedShards().length, 2, 'the first claiming round stops at the share');
        // A few more balancing rounds (every 250 ms): the free shard stays free.
        await new Promise((resolve) => setTimeout(resolve, 1000));
      } finally {
        clearInterval(watch);
      }
      t.is(node.ownedShards().length, 2);
      t.is(most, 2, 'never held more than its share');
    } finally {
      await ghost?.stop();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'a member appearing makes a node holding share + 1 hand exactly one shard over; its expiry gives it back',
  async (t) => {
    const prefix = uniquePrefix('own-join');
    const nodes: Cluster[] = [];
    let ghost: Awaited<ReturnType<typeof ghostMember>> | undefined;
    try {
      const node = await startNode(prefix, 'node-a', ENV);
      nodes.push(node);
      await node.start();
      t.is(node.ownedShards().length, SHARDS);
      ghost = await ghostMember(prefix);
      await until(
        () => node.ownedShards().length === 2,
        2000,
        () => `${node.ownedShards().length} shards owned with two members, not 2`,
      );
      await new Promise((resolve) => setTimeout(resolve, 600));
      t.is(node.ownedShards().length, 2, 'it stays at its share');
      await ghost.stop();
      ghost = undefined;
      // The ghost's lease runs out with the bucket's TTL (1.5 s): the node is alone again.
      await until(
        () => node.ownedShards().length === SHARDS,
        4000,
        () => `${node.ownedShards().length} shards owned once alone again, not ${SHARDS}`,
      );
      t.pass();
    } finally {
      await ghost?.stop();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'a shards bucket made again under a node (members bucket untouched): it claims nothing there for a lease TTL',
  async (t) => {
    const prefix = uniquePrefix('own-remade');
    const nodes: Cluster[] = [];
    const nc = await connect({ servers: NATS_URL });
    try {
      const node = await startNode(prefix, 'node-a', ENV);
      nodes.push(node);
      await node.start();
      t.is(node.ownedShards().length, SHARDS);
      const acquiredAt: number[] = [];
      node.onShardAcquired(() => void acquiredAt.push(Date.now()));
      // Made again as an instance makes it (cluster.ts): same TTL, file storage, now empty.
      const name = bucketNames(prefix).shards;
      await (await jetstreamManager(nc)).streams.delete(`KV_${name}`);
      const remadeAt = Date.now();
      await new Kvm(nc).create(name, { ttl: 1500, history: 1, storage: StorageType.File });
      // Its renewals fail against the empty bucket (the leases are lost at once); it owns its shards again later.
      await until(
        () => node.ownedShards().length === SHARDS && acquiredAt.length >= SHARDS,
        6000,
        () => `${node.ownedShards().length} shards owned after the bucket was made again`,
      );
      const first = Math.min(...acquiredAt) - remadeAt;
      t.true(first >= 1500 - 50, `a shard was claimed ${first} ms after the bucket was made again`);
    } finally {
      await nc.close();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'balancing runs twice per renewal period: the members bucket is read every half period',
  async (t) => {
    const prefix = uniquePrefix('own-cadence');
    const nodes: Cluster[] = [];
    const spy = await connect({ servers: NATS_URL });
    try {
      const node = await startNode(prefix, 'node-a', ENV);
      nodes.push(node);
      await node.start();
      // A JetStream API request is a message on its subject: a plain subscriber sees every read of the bucket.
      let reads = 0;
      const sub = spy.subscribe(`$JS.API.STREAM.INFO.KV_${bucketNames(prefix).members}`, {
        callback: () => {
          reads++;
        },
      });
      await spy.flush();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      sub.unsubscribe();
      // CLUSTER_RENEW_MS 500: a round every 250 ms, 8 in 2 s (a few fewer on a loaded machine; 2 at one per period).
      t.true(reads >= 5 && reads <= 9, `${reads} balancing rounds in 2 s`);
    } finally {
      await spy.close();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'a node below its share claims a free shard before trying to take back one it lost to another instance',
  async (t) => {
    const prefix = uniquePrefix('own-lost-first');
    const nodes: Cluster[] = [];
    const env = { ...ENV, CLUSTER_SHARDS: '4' };
    const thief = await connect({ servers: NATS_URL });
    let ghost: Awaited<ReturnType<typeof ghostMember>> | undefined;
    let keepStolen: NodeJS.Timeout | undefined;
    try {
      const node = await startNode(prefix, 'node-a', env);
      nodes.push(node);
      ghost = await ghostMember(prefix);
      await node.start();
      t.is(node.ownedShards().length, 2, 'two members, four shards: a share of 2, the other two free');
      const [stolen] = node.ownedShards();
      const { shards } = bucketNames(prefix);
      // Another instance's value written over the node's lease (kept alive past the bucket's TTL): the node's next
      // renewal fails its compare-and-set and the shard is lost, remembered as one that may hold our leftover.
      const kv = await new Kvm(thief).open(shards);
      const steal = () => kv.put(shardKey(stolen), JSON.stringify({ instanceId: 'thief', incarnation: 'x' }));
      // Every write to the stolen key is a message on its subject: the node's claims of it show here, told from its
      // renewals by the revision they expect (a claim creates the key: it expects none, 0).
      const claimsOfStolen: string[] = [];
      const sub = thief.subscribe(`$KV.${shards}.${shardKey(stolen)}`, {
        callback: (_err, msg) => {
          const expected = msg.headers?.get('Nats-Expected-Last-Subject-Sequence');
          if (msg.string().includes('node-a') && expected === '0') claimsOfStolen.push(msg.string());
        },
      });
      await thief.flush();
      await steal();
      keepStolen = setInterval(() => void steal().catch(() => undefined), 300);
      await until(
        () => !node.ownedShards().includes(stolen),
        3000,
        () => `shard ${stolen} still owned after another instance's value replaced the lease`,
      );
      await until(
        () => node.ownedShards().length === 2,
        3000,
        () => `${node.ownedShards().length} shards owned after the loss, not 2`,
      );
      // A few more balancing rounds (every 250 ms): at its share, it tries nothing more.
      await new Promise((resolve) => setTimeout(resolve, 600));
      sub.unsubscribe();
      t.false(node.ownedShards().includes(stolen));
      t.deepEqual(claimsOfStolen, [], 'the free shard was claimed first; the lost one was never tried');
    } finally {
      clearInterval(keepStolen);
      await ghost?.stop();
      await thief.close();
      await cleanup(prefix, nodes);
    }
  },
);
