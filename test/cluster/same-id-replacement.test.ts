// A process that stalls past its leases (SIGSTOP on a real child process) while a replacement starts under the same
// CLUSTER_INSTANCE_ID and takes every shard: when the old one resumes it must not adopt or take back the
// replacement's keys, though they hold its instance id. The leases' value names the process (an incarnation), so
// the old one finds another process's value and lets go; no shard ever has two owners.
import type { Cluster } from '../../lib/cluster/cluster';
import { cleanup, natsTest, spawnNode, startNode, uniquePrefix, until, untilOwns } from './cluster-fixtures';

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
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await cleanup(prefix, [replacement]);
    }
  },
);
