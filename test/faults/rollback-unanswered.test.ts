// A ROLLBACK that gets no answer (the connection goes half-open as it is sent), with the default statement time
// (5 s, so a statement's own client-side limit is 6 s) and a pool of one connection: knex gives up on a ROLLBACK
// after 5 s and hands the connection back with the ROLLBACK still pending on it. The service gives the connection up
// before that, so the next request gets a fresh one and is answered, instead of queueing behind the dead ROLLBACK
// for ever.
import test from 'ava';
import { onMariaDb, SKIPPED_ON_SQLITE, startBehindProxy, type ProxiedService } from './fault-fixtures';

if (!onMariaDb) {
  test.skip(SKIPPED_ON_SQLITE, () => {});
} else {
  let service: ProxiedService;

  test.before(async () => {
    service = await startBehindProxy({
      env: { DB_POOL_MAX: '1' },
      world: { buyers: 1, products: 1, stock: 5 },
    });
  });
  test.after.always(() => service?.close());

  /** Resolves with the response, or with 'no answer' after `ms`. */
  const within = <T>(ms: number, work: Promise<T>): Promise<T | 'no answer'> =>
    Promise.race([work, new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), ms))]);

  test.serial('the connection of an unanswered ROLLBACK is not handed to the next request', async (t) => {
    const [productId] = [...service.world.initial.keys()];
    const seller = service.world.sellers[0];
    const buyer = service.world.buyers[0];
    const orders = () => service.app.request('GET', '/api/v1/orders', { token: buyer.token });
    t.is((await orders()).status, 200); // the pool's one connection is open

    // Deleting an image the product does not have: the transaction locks the product, finds no image and rolls back.
    const silenced = service.proxy.silenceOn('ROLLBACK', { halfOpen: true });
    const start = Date.now();
    const removed = await service.app.request('DELETE', `/api/v1/products/${productId}/images/999999`, {
      token: seller.token,
    });
    await silenced;
    t.true(Date.now() - start < 8_000, `the delete was answered after ${Date.now() - start} ms`);
    // The ROLLBACK's own error answers the request: whether the image existed is not known.
    t.is(removed.status, 503, removed.text);
    t.like(removed.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
    t.truthy(removed.headers.get('retry-after'));

    const next = await within(10_000, orders());
    t.not(next, 'no answer', 'the next request was answered');
    if (next !== 'no answer') t.is(next.status, 200, next.text);
    service.proxy.pass();
  });
}
