// The other half of a one-sided NATS blip (one-sided-reconnect.test.ts pins the first): while only A is cut off,
// B's edit is announced on NATS and A misses it. A's reconnect must drop A's own caches too, not only tell the
// others to drop theirs: nobody else knows A missed something, and A's detail cache would otherwise serve the
// old price for its whole TTL (minutes).
import test from 'ava';
import { createMember, createProduct } from '../helpers/factories';
import { natsTest, until, startProxiedPair, type ProxiedPair } from './cluster-fixtures';

let pair: ProxiedPair | undefined;
test.after.always(() => pair?.close());

natsTest(
  'an instance that lost only its own NATS link drops its own caches on reconnecting: it serves the edit it missed',
  async (t) => {
    pair = await startProxiedPair('one-sided-edges');
    const { a, b, proxy } = pair;
    const seller = await createMember(b, 'SELLER');
    const productId = await createProduct(b, seller.id, { stockQuantity: 5, price: '10.00' });
    const detail = `/api/v1/products/${productId}`;
    const cached = await a.request('GET', detail);
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
    const edit = await b.request('PATCH', detail, { token: seller.token, body: { price: 12.5 } });
    t.is(edit.status, 200, edit.text);
    t.is(edit.body.price, 12.5);
    // B's announcement never reached A: A still serves its copy.
    t.is((await a.request('GET', detail)).body.price, 10);

    proxy.pass();
    const back = Date.now();
    await until(
      async () => (await a.request('GET', detail)).body.price === 12.5,
      // A reconnects within its reconnect wait (250 ms) once NATS takes connections again.
      1000 + 250,
      () => "A still serves the price from before B's edit",
    );
    t.log(`A served B's edit ${Date.now() - back} ms after its link was let through again`);
    const fresh = await a.request('GET', detail);
    t.is(fresh.headers.get('etag'), (await b.request('GET', detail)).headers.get('etag'));
  },
);
