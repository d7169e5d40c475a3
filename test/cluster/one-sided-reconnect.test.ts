// Only one instance loses NATS (its link through a proxy is cut: a blip, a middlebox reset), the other stays
// connected. What the first announces meanwhile is dropped by its NATS client, so on reconnecting it tells every
// instance to drop its caches (`cachesStale`), not only itself: the other serves its edit within 1 s of the
// reconnect, not after the cache's TTL. And an event published once the connection is closing (a change committed
// late in a shutdown) is logged and dropped, never thrown.
import test from 'ava';
import { LogCollector } from '../helpers/harness';
import { createCluster } from '../../lib/cluster/cluster';
import { createLogger } from '../../lib/logger';
import {
  clusterConfig,
  editDuringOneSidedCut,
  natsTest,
  uniquePrefix,
  startProxiedPair,
  type ProxiedPair,
} from './cluster-fixtures';

let pair: ProxiedPair | undefined;
test.after.always(() => pair?.close());

natsTest(
  'an instance that lost only its own NATS link makes the others drop what it announced meanwhile',
  async (t) => {
    pair = await startProxiedPair('one-sided');
    await editDuringOneSidedCut(t, pair, 'a');
  },
);

natsTest('an event published once the connection is closing is logged and dropped, not thrown', async (t) => {
  const out = new LogCollector();
  const node = await createCluster({
    config: clusterConfig(uniquePrefix('late-publish')),
    logger: createLogger({ level: 'warn', format: 'line', out }),
  });
  await node.close();
  t.notThrows(() => node.publish('productsChanged', { productIds: [1] }));
  t.regex(out.text, /A productsChanged event could not be published/);
});
