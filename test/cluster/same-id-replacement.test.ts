// A process that stalls past its leases (SIGSTOP on a real child process) while a replacement starts under the same
// CLUSTER_INSTANCE_ID and takes every shard: when the old one resumes it must not adopt or take back the
// replacement's keys, though they hold its instance id. The leases' value names the process (an incarnation), so
// the old one finds another process's value and lets go; no shard ever has two owners. Requests forwarded by owner
// go to the process's own subject (instance id and incarnation), so the resumed one never receives them.
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { bucketNames, type Cluster } from '../../lib/cluster/cluster';
import { createClusterEvents } from '../../lib/cluster/cluster-events';
import { createForwarder } from '../../lib/cluster/forwarding';
import { createOwnerMap, processAddress } from '../../lib/cluster/owner-map';
import {
  cleanup,
  forwarderSettings,
  NATS_URL,
  natsTest,
  quietLogger,
  spawnNode,
  startNode,
  uniquePrefix,
  until,
  untilOwns,
} from './cluster-fixtures';

const SHARDS = 4;
const TTL_MS = 1500;
const RENEW_MS = 300;
const LEASES = {
  CLUSTER_SHARDS: String(SHARDS),
  CLUSTER_LEASE_TTL_MS: String(TTL_MS),
  CLUSTER_RENEW_MS: String(RENEW_MS),
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

natsTest(
  'a stalled process resuming after a replacement took its id and shards never serves a shard the replacement holds',
  async (t) => {
    const prefix = uniquePrefix('same-id');
    const old = spawnNode(prefix, 'pod-0', LEASES);
    const child = old.process;
    let replacement: Cluster | undefined;
    try {
      await until(
        () => old.owned.length === SHARDS,
        15_000,
        () => `the first process owns ${JSON.stringify(old.owned)}: ${old.stderr}`,
      );
      child.kill('SIGSTOP');
      await sleep(TTL_MS + 1000); // its keys, the membership's too, expire on the server
      replacement = await startNode(prefix, 'pod-0', LEASES);
      await replacement.start();
      await untilOwns(replacement, SHARDS, 10_000, 'for the replacement');

      child.kill('SIGCONT');
      const reportsBefore = old.reports;
      await until(
        () => old.reports > reportsBefore,
        5000,
        () => 'the resumed process reports nothing',
      );
      // Several balancing rounds of the resumed process (every 150 ms) and renewals of the replacement (300 ms).
      let overlaps = 0;
      for (const end = Date.now() + 3000; Date.now() < end; await sleep(10)) {
        const both = old.owned.filter((shard) => replacement!.ownedShards().includes(shard));
        if (both.length > 0) overlaps++;
      }
      t.is(overlaps, 0, 'samples with a shard owned by both processes');
      t.deepEqual(old.owned, [], 'the resumed process owns nothing');
      t.deepEqual(replacement.ownedShards(), [0, 1, 2, 3], 'the replacement keeps every shard');

      // Requests another instance forwards by owner reach the replacement alone: the resumed process still listens
      // under the same instance id, and a message both received would run here and again after its "moved" answer.
      const runs = new Map<number, number>();
      replacement.serve(async ({ productId }) => {
        runs.set(productId, (runs.get(productId) ?? 0) + 1);
        return { servedBy: 'replacement' };
      });
      const nc = await connect({ servers: NATS_URL });
      const owners = createOwnerMap({
        kv: await new Kvm(nc).open(bucketNames(prefix).shards),
        ttlMs: TTL_MS,
        logger: quietLogger(),
      });
      try {
        owners.start();
        await until(
          () => [0, 1, 2, 3].every((shard) => owners.addressOf(shard) !== null),
          3000,
          () => 'the owner map never learnt every shard',
        );
        const caller = createForwarder({
          ...forwarderSettings(prefix),
          shardOf: (id: number) => id % SHARDS,
          nc,
          instanceId: 'caller',
          owns: () => false,
          ownerOf: owners.addressOf,
          ownerGone: owners.forget,
        });
        const products = Array.from({ length: 8 }, (_, n) => 100 + n);
        const answers = await Promise.all(products.map((id) => caller.request(id, {})));
        t.true(answers.every((answer) => (answer as { servedBy: string }).servedBy === 'replacement'));
        t.deepEqual(
          products.map((id) => runs.get(id)),
          products.map(() => 1),
          'each forwarded request ran once',
        );
      } finally {
        await owners.stop();
        await nc.close();
      }
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await cleanup(prefix, [replacement]);
    }
  },
);

natsTest(
  "two processes under one instance id do not take each other's change events for their own",
  async (t) => {
    const prefix = uniquePrefix('same-id-events');
    const connections = [await connect({ servers: NATS_URL }), await connect({ servers: NATS_URL })];
    try {
      const [stalled, replacement] = connections.map((nc, i) =>
        createClusterEvents({
          nc,
          prefix,
          instanceId: 'pod-0',
          address: processAddress('pod-0', `incarnation-${i}`),
          logger: quietLogger(),
        }),
      );
      const seen: Array<{ by: string; own: boolean; origin: string }> = [];
      await stalled.subscribe(
        'productsChanged',
        ({ own, origin }) => void seen.push({ by: 'stalled', own, origin }),
      );
      await replacement.subscribe(
        'productsChanged',
        ({ own, origin }) => void seen.push({ by: 'replacement', own, origin }),
      );
      replacement.publish('productsChanged', { productIds: [7] });
      await until(
        () => seen.length === 2,
        3000,
        () => JSON.stringify(seen),
      );
      t.deepEqual(
        seen.sort((a, b) => a.by.localeCompare(b.by)),
        [
          { by: 'replacement', own: true, origin: 'pod-0' },
          { by: 'stalled', own: false, origin: 'pod-0' },
        ],
        'the stalled process drops its copies of what the replacement changed',
      );
    } finally {
      await Promise.all(connections.map((nc) => nc.close()));
    }
  },
);
