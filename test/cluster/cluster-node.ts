// A cluster node in its own process, for the tests that kill one with SIGKILL. Configured like the service
// (NATS_URL, CLUSTER_*); answers every request with `{ servedBy: <instance id> }`; prints its owned shards as JSON lines.
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { createCluster } from '../../lib/cluster/cluster';

const config = loadConfig();
const cluster = await createCluster({
  config: config.cluster!,
  logger: createLogger({ level: 'warn', format: 'line', out: process.stderr }),
});
cluster.serve(async () => ({ servedBy: cluster.instanceId }));
const report = (): void => {
  process.stdout.write(`${JSON.stringify({ owned: cluster.ownedShards() })}\n`);
};
// A shard counts as owned once its acquired listeners are done, so the owned set is also printed every 100 ms.
cluster.onShardLost(report);
await cluster.start();
setInterval(report, 100);
process.on('SIGTERM', () => {
  void cluster.close().then(() => process.exit(0));
});
