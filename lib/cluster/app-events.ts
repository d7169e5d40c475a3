// The app's change events across the cluster: what this instance's areas announce on the in-process bus
// (lib/events.ts) is published on NATS, and what other instances publish is emitted here with origin `remote`,
// so every instance drops its cached copies (detail, popular, count, categories) and its actors re-read. A
// reconnect to NATS means events may have been missed: every cache is dropped (`cachesStale`). The caches'
// TTLs remain the last-resort bound when NATS itself loses a message.
import type { EventBus } from '../events';
import type { Cluster } from './cluster';

/** Product ids changed in one tick travel as one message (a group commit announces a batch at once). */
interface ProductsChanged {
  productIds: number[];
}

export async function bridgeAppEvents(bus: EventBus, cluster: Cluster): Promise<() => void> {
  const pending = new Set<number>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const productIds = [...pending];
    pending.clear();
    if (productIds.length > 0) cluster.publish('productsChanged', { productIds } satisfies ProductsChanged);
  };

  const offs = [
    bus.on('productChanged', ({ productId, origin }) => {
      if (origin === 'remote') return;
      pending.add(productId);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }),
    bus.on('categoriesChanged', ({ remote }) => {
      if (!remote) cluster.publish('categoriesChanged', {});
    }),
    await cluster.subscribe<ProductsChanged>('productsChanged', async ({ own, payload }) => {
      if (own || !Array.isArray(payload?.productIds)) return;
      for (const productId of payload.productIds) {
        if (Number.isSafeInteger(productId))
          await bus.emit('productChanged', { productId, origin: 'remote' });
      }
    }),
    await cluster.subscribe('categoriesChanged', async ({ own }) => {
      if (!own) await bus.emit('categoriesChanged', { remote: true });
    }),
    cluster.onReconnected(() => bus.emit('cachesStale')),
  ];
  return () => {
    for (const off of offs) off();
  };
}
