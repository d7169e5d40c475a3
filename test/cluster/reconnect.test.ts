// A NATS restart, on a private nats-server (its own port and store, so the shared one is never disturbed):
// while NATS is away the node's renewals fail and it stops serving every shard (onShardLost) before its
// leases could expire on the server, and refuses forwarded requests at once; when NATS is back the
// connection reconnects by itself, the `reconnected` signal fires (caches flush on it), and the node claims its
// shards again once their leases have expired on the server. The lease buckets are on file: a quick restart
// keeps every lease, so no second holder can claim a key its holder still trusts.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { bucketNames, createCluster, type Cluster } from '../../lib/cluster/cluster';
import { createLogger, type Logger } from '../../lib/logger';
import { LogCollector } from '../helpers/harness';
import { ServiceUnavailableError } from '../../lib/errors';
import {
  cleanup,
  clusterConfig,
  exactlyOnce,
  NATS_URL,
  natsTest,
  quietLogger,
  shareReport,
  uniquePrefix,
  until,
  untilOwns,
} from './cluster-fixtures';
import { startPrivateNats, type PrivateNats } from './private-nats';

/**
 * Two nodes of a fresh cluster (8 shards) on `natsUrl`, holding the shards exactly once, and a sampler that every 2
 * ms notes each shard served by both at one instant (a split brain; productId = shard here). `stop()` ends the
 * sampler and closes the nodes.
 */
async function sampledPair(label: string, options: { natsUrl?: string; logger?: Logger } = {}) {
  const prefix = uniquePrefix(label);
  const nodes: Cluster[] = [];
  const overlaps = new Set<string>();
  const sampling = { samples: 0, timer: undefined as NodeJS.Timeout | undefined };
  const stop = async () => {
    clearInterval(sampling.timer);
    await cleanup(prefix, nodes);
  };
  try {
    for (const id of [`${label}-a`, `${label}-b`]) {
      const config = clusterConfig(prefix, { CLUSTER_SHARDS: '8', CLUSTER_INSTANCE_ID: id });
      const node = await createCluster({
        config: { ...config, natsUrl: options.natsUrl ?? config.natsUrl },
        logger: options.logger ?? quietLogger(),
      });
      nodes.push(node);
      await node.start();
    }
    await until(
      () => exactlyOnce(nodes, 8, 4),
      10_000,
      () => shareReport(nodes),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  sampling.timer = setInterval(() => {
    sampling.samples++;
    for (let shard = 0; shard < 8; shard++)
      if (nodes.every((node) => node.isOwner(shard))) overlaps.add(`shard ${shard}`);
  }, 2);
  return { prefix, nodes, overlaps, samples: () => sampling.samples, stop };
}

/** Restarts the private NATS with an empty store, and waits until a node says it makes the lease buckets again. */
async function restartWithEmptyStore(nats: PrivateNats, logs: LogCollector): Promise<void> {
  await nats.stop();
  nats.wipeStore();
  await nats.start();
  await until(
    () => logs.lines.some((line) => line.includes('The lease buckets are gone')),
    15_000,
    () => `no recreation logged: ${logs.text}`,
  );
}

natsTest(
  'NATS restarts: the node stops serving its shards before their leases could expire on the server, reconnects by itself, signals reconnected and claims its shards again',
  async (t) => {
    const nats = await startPrivateNats();
    let node: Cluster | undefined;
    try {
      const config = {
        ...clusterConfig(uniquePrefix('reconnect'), { CLUSTER_SHARDS: '8' }),
        natsUrl: nats.url,
      };
      node = await createCluster({ config, logger: quietLogger() });
      const lost: number[] = [];
      let reconnects = 0;
      node.onShardLost((shard) => void lost.push(shard));
      node.onReconnected(() => void reconnects++);
      await node.start();
      await untilOwns(node!, 8, 5000);

      await nats.stop();
      const awayAt = Date.now();
      await untilOwns(node!, 0, 4000);
      const stoppedAfter = Date.now() - awayAt;
      t.log(`stopped serving ${stoppedAfter} ms after NATS went away`);
      t.true(stoppedAfter < 3000, 'before the 3 s lease TTL lets anyone else claim them');
      // Serving stops when a lease's validity runs out; its `lost` signal follows when the failed renewal
      // returns (NATS does not answer), which on a loaded machine can be a little later for some shards.
      await until(
        () => lost.length === 8,
        5000,
        () => `lost signalled for ${JSON.stringify(lost)}`,
      );
      t.deepEqual(
        [...lost].sort((a, b) => a - b),
        [0, 1, 2, 3, 4, 5, 6, 7],
      );
      t.false(node.isOwner(3));
      // Not left waiting for the request timeout: refused at once while NATS is away.
      const refusedAt = Date.now();
      await t.throwsAsync(node.request(3, {}), {
        instanceOf: ServiceUnavailableError,
        message: 'The cluster is unreachable; please retry',
      });
      // (well under the 5 s request timeout; a loaded machine may take a few hundred ms to get here)
      t.true(Date.now() - refusedAt < 1000, `refused after ${Date.now() - refusedAt} ms`);

      await nats.start();
      await until(
        () => reconnects > 0,
        10_000,
        () => 'no reconnected signal',
      );
      await untilOwns(node!, 8, 10_000, 'after reconnect');
      t.is(reconnects, 1);
      t.true(node.isOwner(3));
    } finally {
      await node?.close();
      await nats.close();
    }
  },
);

natsTest(
  'a quick NATS restart (kill -9, back at once) keeps the leases: no shard ever has two owners, and the owners keep their shards',
  async (t) => {
    const nats = await startPrivateNats();
    let pair: Awaited<ReturnType<typeof sampledPair>> | undefined;
    try {
      pair = await sampledPair('restart', { natsUrl: nats.url });
      const { nodes } = pair;
      const before = nodes.map((node) => [...node.ownedShards()].sort((a, b) => a - b));

      const killedAt = Date.now();
      await nats.stop();
      await nats.start();
      const downMs = Date.now() - killedAt;
      // Both nodes have reconnected and renewed (or re-claimed) through the restarted server.
      await until(
        () => exactlyOnce(nodes, 8, 4),
        10_000,
        () => shareReport(nodes),
      );
      // A few renewal periods more: a claim on a wiped bucket would show by now.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      t.log(`NATS was down ${downMs} ms; ${pair.samples()} samples`);
      t.deepEqual([...pair.overlaps], []);
      t.true(pair.samples() > 100, `${pair.samples()} samples`);
      t.true(exactlyOnce(nodes, 8, 4), shareReport(nodes));
      // The leases lived through the restart: the holders renewed them and kept their shards.
      t.deepEqual(
        nodes.map((node) => [...node.ownedShards()].sort((a, b) => a - b)),
        before,
      );
    } finally {
      await pair?.stop();
      await nats.close();
    }
  },
);

natsTest(
  'NATS back with an empty store (its buckets gone): the node creates the lease buckets again, says so, and owns its shards again',
  async (t) => {
    const nats = await startPrivateNats();
    let node: Cluster | undefined;
    const logs = new LogCollector();
    try {
      const config = {
        ...clusterConfig(uniquePrefix('wiped'), { CLUSTER_SHARDS: '8' }),
        natsUrl: nats.url,
      };
      node = await createCluster({
        config,
        logger: createLogger({ level: 'warn', format: 'line', out: logs }),
      });
      await node.start();
      await untilOwns(node!, 8, 5000);

      await restartWithEmptyStore(nats, logs);
      // Past the leases the node held before (3 s TTL): what it owns now it claimed in the new buckets.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      await untilOwns(node!, 8, 15_000, 'after the buckets were recreated');
      // The buckets exist again on the new server, holding the node's leases.
      const nc = await connect({ servers: nats.url });
      try {
        const jsm = await jetstreamManager(nc);
        const names: string[] = [];
        for await (const info of jsm.streams.list()) names.push(info.config.name);
        t.true(
          names.some((name) => name.startsWith('KV_')),
          `streams: ${names}`,
        );
      } finally {
        await nc.close();
      }
      // And it serves them: a request for a shard runs here.
      t.true(node.isOwner(3));
    } finally {
      await node?.close();
      await nats.close();
    }
  },
);

natsTest(
  'NATS back at once with an empty store, two nodes: no shard ever has two owners while the buckets are made again',
  async (t) => {
    const nats = await startPrivateNats();
    const logs = new LogCollector();
    let pair: Awaited<ReturnType<typeof sampledPair>> | undefined;
    try {
      pair = await sampledPair('wiped', {
        natsUrl: nats.url,
        logger: createLogger({ level: 'warn', format: 'line', out: logs }),
      });
      const { nodes } = pair;
      await restartWithEmptyStore(nats, logs);
      // The leases of the old buckets are trusted for at most their TTL (3 s): no claim before that, then every
      // shard is owned again.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      await until(
        () => exactlyOnce(nodes, 8, 4),
        15_000,
        () => `${shareReport(nodes)}\n${logs.text}`,
      );
      // A few renewal periods more: an overlap would show by now.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      t.deepEqual([...pair.overlaps], []);
      t.true(pair.samples() > 100, `${pair.samples()} samples`);
      t.true(exactlyOnce(nodes, 8, 4), shareReport(nodes));
    } finally {
      await pair?.stop();
      await nats.close();
    }
  },
);

natsTest(
  'only the shards bucket deleted under two nodes: no shard ever has two owners while it is made again',
  async (t) => {
    const pair = await sampledPair('shards-gone');
    try {
      // The members bucket stays: only the shards bucket's creation time tells that every lease is gone.
      const nc = await connect({ servers: NATS_URL });
      try {
        await (await jetstreamManager(nc)).streams.delete(`KV_${bucketNames(pair.prefix).shards}`);
      } finally {
        await nc.close();
      }
      // The old leases are trusted for at most their TTL (3 s); then every shard is owned again.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      await until(
        () => exactlyOnce(pair.nodes, 8, 4),
        15_000,
        () => shareReport(pair.nodes),
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
      t.deepEqual([...pair.overlaps], []);
      t.true(pair.samples() > 100, `${pair.samples()} samples`);
    } finally {
      await pair.stop();
    }
  },
);

natsTest(
  'NATS back with an empty store and a new instance starting at once: no shard has two owners (the new one waits until the bucket is a lease TTL old)',
  async (t) => {
    const nats = await startPrivateNats();
    const prefix = uniquePrefix('wiped-new');
    const logs = new LogCollector();
    const nodes: Cluster[] = [];
    const overlaps = new Set<string>();
    let sampler: NodeJS.Timeout | undefined;
    try {
      const node = async (id: string) => {
        const config = {
          ...clusterConfig(prefix, { CLUSTER_SHARDS: '8', CLUSTER_INSTANCE_ID: id }),
          natsUrl: nats.url,
        };
        const made = await createCluster({
          config,
          logger: createLogger({ level: 'info', format: 'line', out: logs }),
        });
        nodes.push(made);
        return made;
      };
      const old = await node('old');
      await old.start();
      await untilOwns(old, 8, 5000);
      await nats.stop();
      nats.wipeStore();
      await nats.start();
      // The old node trusts its leases until its next renewal fails; a node that never saw the old bucket cannot
      // tell it was made again. It starts at once, while the sampler notes any shard served by both.
      const fresh = await node('fresh');
      sampler = setInterval(() => {
        for (let shard = 0; shard < 8; shard++)
          if (old.isOwner(shard) && fresh.isOwner(shard)) overlaps.add(`shard ${shard}`);
      }, 2);
      await fresh.start();
      t.true(fresh.ownedShards().length > 0, 'start() resolves once it may claim, holding shards');
      await until(
        () => exactlyOnce(nodes, 8, 4),
        15_000,
        () => `${shareReport(nodes)}\n${logs.text}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
      t.deepEqual([...overlaps], []);
      t.regex(logs.text, /Bucket .* is \d+ ms old: no shard is claimed for \d+ ms/);
    } finally {
      clearInterval(sampler);
      await Promise.allSettled(nodes.map((node) => node.close()));
      await nats.close();
    }
  },
);

natsTest(
  'leaving with NATS dead or stalled: close() resolves within the request timeout, never rejects, and says the leases run out',
  async (t) => {
    for (const fault of ['dead', 'stalled'] as const) {
      const nats = await startPrivateNats();
      const logs = new LogCollector();
      let node: Cluster | undefined;
      try {
        const config = {
          ...clusterConfig(uniquePrefix(`leave-${fault}`), {
            CLUSTER_SHARDS: '8',
            CLUSTER_REQUEST_TIMEOUT_MS: '1500',
          }),
          natsUrl: nats.url,
        };
        node = await createCluster({
          config,
          logger: createLogger({ level: 'warn', format: 'line', out: logs }),
        });
        await node.start();
        await untilOwns(node, 8, 5000);
        if (fault === 'dead') await nats.stop();
        else nats.pause();
        const leaving = Date.now();
        await t.notThrowsAsync(node.close(), fault);
        const took = Date.now() - leaving;
        t.log(`${fault}: left in ${took} ms`);
        // Before: a dead NATS rejected close() (the shutdown skipped the inventory's flush and the database's
        // close), a stalled one kept it waiting ~35 s.
        t.true(took < 1500 + 1000, `${fault}: close() took ${took} ms`);
        t.regex(
          logs.text,
          /Leaving the cluster did not finish.*leases run out on the server within 3000 ms/,
          fault,
        );
      } finally {
        if (fault === 'stalled') nats.resume();
        await nats.close();
      }
    }
  },
);
