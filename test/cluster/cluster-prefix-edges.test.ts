// Two clusters on one NATS (CLUSTER_PREFIX apart: a staging and a production deployment, or two test files) never
// meet: a request for a shard is answered by the owner in its own cluster, never by the other's owner of the same
// shard number (it would run on the other deployment's database), and an event reaches only its own cluster.
import type { Cluster } from '../../lib/cluster/cluster';
import { cleanup, natsTest, productIn, startNode, uniquePrefix, until } from './cluster-fixtures';

const ENV = { CLUSTER_SHARDS: '4', CLUSTER_LEASE_TTL_MS: '1500', CLUSTER_RENEW_MS: '500' };

natsTest('two clusters on one NATS: requests and events stay within their CLUSTER_PREFIX', async (t) => {
  const prefixes = [uniquePrefix('prefix-x'), uniquePrefix('prefix-y')];
  const owners: Cluster[] = [];
  const fronts: Cluster[] = [];
  try {
    for (const prefix of prefixes) {
      // Same instance ids in both clusters: only the prefix tells them apart.
      const owner = await startNode(prefix, 'owner', ENV);
      owners.push(owner);
      owner.serve(async () => ({ cluster: prefix }));
      // A node that never joins: it owns nothing, so every request it makes is forwarded.
      fronts.push(await startNode(prefix, 'front', ENV));
    }
    await Promise.all(owners.map((owner) => owner.start()));
    const heard = prefixes.map(() => [] as string[]);
    for (const [i, front] of fronts.entries())
      await front.subscribe<{ from: string }>('productsChanged', ({ payload }) => {
        heard[i].push(payload.from);
      });

    for (const [i, front] of fronts.entries()) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, n) =>
          front.request<{ cluster: string }>(productIn(n % 4, 4, 1 + n), {}),
        ),
      );
      t.deepEqual(new Set(answers.map((answer) => answer.cluster)), new Set([prefixes[i]]));
    }

    owners[0].publish('productsChanged', { from: prefixes[0] });
    owners[1].publish('productsChanged', { from: prefixes[1] });
    await until(
      () => heard.every((events) => events.length > 0),
      1000,
      () => JSON.stringify(heard),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.deepEqual(heard, [[prefixes[0]], [prefixes[1]]]);
  } finally {
    await cleanup(prefixes[0], [owners[0], fronts[0]]);
    await cleanup(prefixes[1], [owners[1], fronts[1]]);
  }
});
