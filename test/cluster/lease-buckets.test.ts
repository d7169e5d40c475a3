// The lease buckets a cluster finds already made (lib/cluster/cluster.ts, openBucket): one with another lease TTL
// is refused at start (every instance of a cluster needs the same CLUSTER_LEASE_TTL_MS), and one an older version
// made in memory is used as it is, with a warning that a NATS restart wipes its leases. An instance whose
// CLUSTER_SHARDS differs from the live members' is refused at start (its shard n would be other products), also
// when the two start at the same moment.
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { bucketNames, createCluster, destroyClusterBuckets, type Cluster } from '../../lib/cluster/cluster';
import { liveKeys } from '../../lib/cluster/lease-table';
import { createLogger } from '../../lib/logger';
import { LogCollector } from '../helpers/harness';
import {
  cleanup,
  clusterConfig,
  NATS_URL,
  natsTest,
  startNode,
  uniquePrefix,
  until,
  untilOwns,
} from './cluster-fixtures';

/** The members of `prefix`'s cluster: the keys present in its members bucket. */
async function memberKeys(prefix: string): Promise<string[]> {
  const nc = await connect({ servers: NATS_URL });
  try {
    return await liveKeys(await jetstreamManager(nc), bucketNames(prefix).members);
  } finally {
    await nc.close();
  }
}

/** Makes the shards bucket of `prefix` beforehand, as another instance or an older version left it. */
async function makeShardsBucket(
  prefix: string,
  options: { ttl: number; storage: StorageType },
): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  try {
    await new Kvm(nc).create(bucketNames(prefix).shards, { ...options, history: 1 });
  } finally {
    await nc.close();
  }
}

natsTest('a lease bucket with another TTL is refused at start, naming CLUSTER_LEASE_TTL_MS', async (t) => {
  const prefix = uniquePrefix('ttl');
  try {
    await makeShardsBucket(prefix, { ttl: 6000, storage: StorageType.File });
    const config = clusterConfig(prefix, { CLUSTER_SHARDS: '8' }); // 3000 ms, the default
    await t.throwsAsync(
      createCluster({
        config,
        logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
      }),
      {
        message: `KV bucket ${prefix}-shards has a lease TTL of 6000 ms, this instance is configured with 3000 ms: every instance of a cluster needs the same CLUSTER_LEASE_TTL_MS`,
      },
    );
  } finally {
    await destroyClusterBuckets(NATS_URL, prefix);
  }
});

natsTest(
  'an instance with another CLUSTER_SHARDS than the live members is refused at start; one with the same joins',
  async (t) => {
    const prefix = uniquePrefix('shard-count');
    const nodes: Cluster[] = [];
    const node = async (instanceId: string, shards: string) => {
      const started = await startNode(prefix, instanceId, { CLUSTER_SHARDS: shards });
      nodes.push(started);
      return started;
    };
    try {
      const first = await node('a', '4');
      await first.start();
      await untilOwns(first, 4, 5000);
      const other = await node('b', '8');
      await t.throwsAsync(other.start(), {
        message:
          'Cluster member a runs with CLUSTER_SHARDS=4, this instance with 8: every instance of a cluster needs the same CLUSTER_SHARDS',
      });
      t.deepEqual(other.ownedShards(), [], 'it claimed nothing');
      t.deepEqual(first.ownedShards(), [0, 1, 2, 3]);
      const same = await node('c', '4');
      await same.start();
      await until(
        () => first.ownedShards().length === 2 && same.ownedShards().length === 2,
        10_000,
        () => `a owns ${first.ownedShards()}, c owns ${same.ownedShards()}`,
      );
    } finally {
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'of two instances with different CLUSTER_SHARDS started at the same moment, at least one is refused',
  async (t) => {
    for (let round = 0; round < 3; round++) {
      const prefix = uniquePrefix('shard-count-race');
      const nodes: Cluster[] = [];
      try {
        nodes.push(await startNode(prefix, 'a', { CLUSTER_SHARDS: '4' }));
        nodes.push(await startNode(prefix, 'b', { CLUSTER_SHARDS: '8' }));
        const outcomes = await Promise.allSettled(nodes.map((node) => node.start()));
        const refused = outcomes.flatMap((outcome, index) =>
          outcome.status === 'rejected' ? [{ node: nodes[index], reason: outcome.reason as Error }] : [],
        );
        t.true(refused.length >= 1, `round ${round}: both started`);
        for (const { node, reason } of refused) {
          t.regex(
            reason.message,
            /^Cluster member [ab] runs with CLUSTER_SHARDS=(4|8), this instance with (4|8): every instance of a cluster needs the same CLUSTER_SHARDS$/,
          );
          t.deepEqual(node.ownedShards(), [], 'a refused instance claims nothing');
        }
        // A refused instance gave its membership back before it failed: the one left (if any) is the only member
        // and ends up owning every shard.
        const left = nodes.find((node) => !refused.some((entry) => entry.node === node));
        t.deepEqual(await memberKeys(prefix), left ? [left.instanceId] : [], `round ${round}`);
        if (left) await untilOwns(left, left.shards, 10_000, `round ${round}`);
      } finally {
        await cleanup(prefix, nodes);
      }
    }
  },
);

natsTest(
  'a lease bucket kept in memory is used as it is, with a warning, and the node owns its shards',
  async (t) => {
    const prefix = uniquePrefix('memory');
    const logs = new LogCollector();
    let node: Cluster | undefined;
    try {
      await makeShardsBucket(prefix, { ttl: 3000, storage: StorageType.Memory });
      node = await createCluster({
        config: clusterConfig(prefix, { CLUSTER_SHARDS: '8' }),
        logger: createLogger({ level: 'warn', format: 'line', out: logs }),
      });
      t.true(
        logs.lines.some((line) =>
          line.includes(
            `KV bucket ${prefix}-shards keeps its leases in memory: a NATS restart wipes them while their holders trust them`,
          ),
        ),
        logs.text,
      );
      t.false(
        logs.lines.some((line) => line.includes(`${prefix}-members keeps its leases in memory`)),
        'the members bucket, made now, is on file',
      );
      await node.start();
      await untilOwns(node!, 8, 5000);
      t.pass();
    } finally {
      await node?.close();
      await destroyClusterBuckets(NATS_URL, prefix);
    }
  },
);
