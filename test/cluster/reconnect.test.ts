// A NATS restart, on a private nats-server (its own port and store, so the shared one is never disturbed):
// while NATS is away the node's renewals fail and it stops serving every shard (onShardLost) before its
// leases could expire on the server, and refuses forwarded requests at once; when NATS is back the
// connection reconnects by itself, the `reconnected` signal fires (caches flush on it), the lease buckets
// (memory storage, gone with the restart) are created again and the node claims its shards again.
import { createCluster, type Cluster } from '../../lib/cluster/cluster';
import { ServiceUnavailableError } from '../../lib/errors';
import { clusterConfig, natsTest, quietLogger, uniquePrefix, until } from './cluster-fixtures';
import { startPrivateNats } from './private-nats';

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
      await until(
        () => node!.ownedShards().length === 8,
        5000,
        () => `${node!.ownedShards().length} of 8`,
      );

      await nats.stop();
      const awayAt = Date.now();
      await until(
        () => node!.ownedShards().length === 0,
        4000,
        () => `${node!.ownedShards().length} still owned`,
      );
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
      await until(
        () => node!.ownedShards().length === 8,
        10_000,
        () => `${node!.ownedShards().length} of 8 after reconnect`,
      );
      t.is(reconnects, 1);
      t.true(node.isOwner(3));
    } finally {
      await node?.close();
      await nats.close();
    }
  },
);
