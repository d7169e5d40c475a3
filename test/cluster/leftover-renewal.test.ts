// A NATS stall longer than the node's trust in its leases (SIGSTOP on a private nats-server): the node lets its
// shards go before the server could let anyone else claim them, and its renewals sent meanwhile (each waited for an
// answer, then given up) wait in the stalled server. On resume the server applies the first of them: the keys hold
// the node's own value again, so nobody can claim them until they expire, one more lease TTL without an owner. The node's next balancing round takes those leftovers back by
// compare-and-set, so it serves its shards again within a round or two of the resume.
import { createCluster, type Cluster } from '../../lib/cluster/cluster';
import { createLogger } from '../../lib/logger';
import { LogCollector } from '../helpers/harness';
import { clusterConfig, natsTest, uniquePrefix, until, untilOwns } from './cluster-fixtures';
import { startPrivateNats } from './private-nats';

// A renewal period of a third of the TTL: the node stops serving a lease a whole period (1 s) before the server
// could expire it, so a resume at that moment reaches the server before its TTL does, and its renewals apply.
const TTL_MS = 3000;
const RENEW_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

natsTest(
  'after a NATS stall longer than the lease, the renewals the server applied on resume are taken back: the shards are served again well before those keys would expire',
  async (t) => {
    const nats = await startPrivateNats();
    const logs = new LogCollector();
    let node: Cluster | undefined;
    try {
      const config = {
        ...clusterConfig(uniquePrefix('leftover'), {
          CLUSTER_SHARDS: '8',
          CLUSTER_LEASE_TTL_MS: String(TTL_MS),
          CLUSTER_RENEW_MS: String(RENEW_MS),
        }),
        natsUrl: nats.url,
      };
      node = await createCluster({
        config,
        logger: createLogger({ level: 'info', format: 'line', out: logs }),
      });
      await node.start();
      await untilOwns(node, 8, TTL_MS + 5000);
      await sleep(RENEW_MS + 100); // renewed at least once

      nats.pause();
      await untilOwns(node, 0, TTL_MS, 'while NATS is stalled');
      nats.resume();
      const resumedAt = Date.now();
      await untilOwns(node, 8, 2 * TTL_MS, 'after the resume');
      const servedAfter = Date.now() - resumedAt;
      t.log(`all 8 shards served again ${servedAfter} ms after the resume`);
      await until(
        () =>
          logs.lines.some((line) =>
            /shard-\d+: our renewal applied after the loss was taken back/.test(line),
          ),
        1000,
        () => `no leftover taken back: ${logs.text}`,
      );
      // A leftover applied at the resume would hold its key until resumedAt + TTL_MS.
      t.true(
        servedAfter < TTL_MS / 2,
        `served again ${servedAfter} ms after the resume, not once the leftovers expired`,
      );
    } finally {
      nats.resume();
      await node?.close();
      await nats.close();
    }
  },
);
