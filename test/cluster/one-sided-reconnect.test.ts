// Only one instance loses NATS (its link through a proxy is cut: a blip, a middlebox reset), the other stays
// connected. What the first announces meanwhile is dropped by its NATS client, so on reconnecting it tells every
// instance to drop its caches (`cachesStale`), not only itself: the other serves its edit within 1 s of the
// reconnect, not after the cache's TTL. And an event published once the connection is closing (a change committed
// late in a shutdown) is logged and dropped, never thrown.
import test from 'ava';
import { LogCollector } from '../helpers/harness';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { createCluster } from '../../lib/cluster/cluster';
import { createLogger } from '../../lib/logger';
import {
  clusterConfig,
  natsTest,
  uniquePrefix,
  until,
  startProxiedPair,
  type ProxiedPair,
} from './cluster-fixtures';

let pair: ProxiedPair | undefined;
test.after.always(() => pair?.close());

natsTest(
  'an instance that lost only its own NATS link makes the others drop what it announced meanwhile',
  async (t) => {
    pair = await startProxiedPair('one-sided');
    const { a, b, proxy } = pair;
    const seller: TestMember = await createMember(a, 'SELLER');
    const productId = await createProduct(a, seller.id, { stockQuantity: 5, price: '10.00' });
    const detail = `/api/v1/products/${productId}`;
    const cached = await b.request('GET', detail);
    t.is(cached.status, 200);
    t.is(cached.body.price, 10);

    // A's link to NATS is cut and new ones refused: A is disconnected, B is not.
    proxy.refuse();
    proxy.cutAll();
    await until(
      () => /Disconnected from NATS/.test(a.logs.text),
      2000,
      () => 'A did not notice the cut',
    );
    const edit = await a.request('PATCH', detail, { token: seller.token, body: { price: 12.5 } });
    t.is(edit.status, 200, edit.text);
    t.is(edit.body.price, 12.5);
    // A's announcement went nowhere: B still serves its copy.
    t.is((await b.request('GET', detail)).body.price, 10);

    proxy.pass();
    const back = Date.now();
    await until(
      async () => (await b.request('GET', detail)).body.price === 12.5,
      // A reconnects within its reconnect wait (250 ms) once NATS takes connections again.
      1000 + 250,
      () => "B still serves the price from before A's edit",
    );
    t.log(`B served A's edit ${Date.now() - back} ms after A's link was let through again`);
    const fresh = await b.request('GET', detail);
    t.is(fresh.headers.get('etag'), (await a.request('GET', detail)).headers.get('etag'));
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
