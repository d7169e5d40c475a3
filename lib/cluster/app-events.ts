// The app's change events across the cluster: what this instance's areas announce on the in-process bus
// (lib/events.ts) is published on NATS, and what other instances publish is emitted here with origin `remote`,
// so every instance drops its cached copies (detail, popular, count, categories, members' token versions) and its
// actors re-read. A reconnect to NATS means events may have been missed, both ways: the instance that reconnects
// drops every cache (`cachesStale`) and tells the others to do the same (what it published while away was dropped,
// and they may never have lost their own connection). The caches' TTLs remain the last-resort bound when NATS
// itself loses a message.
import { PRODUCT_CHANGE_SCOPES, type EventBus, type ProductChangeScope } from '../events';
import type { Cluster } from './cluster';

/**
 * Product ids changed in one tick travel as one message (a group commit announces a batch at once), each with
 * what changed (`scopes[i]`; null: anything), so other instances drop no more than this one did.
 */
interface ProductsChanged {
  productIds: number[];
  scopes?: Array<ProductChangeScope | null>;
}

/** Members whose token version moved (a password change): every instance drops its copy of their versions. */
interface MembersChanged {
  memberIds: number[];
}

/** Two changes of one product in one tick: what both touched (null: anything). */
const merged = (a: ProductChangeScope | null, b: ProductChangeScope | null) => (a === b ? a : null);

const scopeOf = (value: unknown): ProductChangeScope | undefined =>
  PRODUCT_CHANGE_SCOPES.find((scope) => scope === value);

export async function bridgeAppEvents(bus: EventBus, cluster: Cluster): Promise<() => void> {
  const pending = new Map<number, ProductChangeScope | null>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const productIds = [...pending.keys()];
    const scopes = [...pending.values()];
    pending.clear();
    if (productIds.length > 0)
      cluster.publish('productsChanged', { productIds, scopes } satisfies ProductsChanged);
  };

  const offs = [
    bus.on('productsChanged', ({ productIds, origin, scope = null }) => {
      if (origin === 'remote') return;
      for (const productId of productIds)
        pending.set(productId, pending.has(productId) ? merged(pending.get(productId)!, scope) : scope);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }),
    bus.on('categoriesChanged', ({ remote }) => {
      if (!remote) cluster.publish('categoriesChanged', {});
    }),
    bus.on('membersChanged', ({ memberIds, remote }) => {
      if (!remote) cluster.publish('membersChanged', { memberIds: [...memberIds] } satisfies MembersChanged);
    }),
    await cluster.subscribe<ProductsChanged>('productsChanged', async ({ own, payload }) => {
      if (own || !Array.isArray(payload?.productIds)) return;
      // One event per scope present (the message's products changed in up to three ways).
      const byScope = new Map<ProductChangeScope | undefined, number[]>();
      for (const [index, productId] of payload.productIds.entries()) {
        if (!Number.isSafeInteger(productId)) continue;
        const scope = scopeOf(payload.scopes?.[index]);
        const ids = byScope.get(scope);
        if (ids) ids.push(productId);
        else byScope.set(scope, [productId]);
      }
      for (const [scope, productIds] of byScope)
        await bus.emit('productsChanged', { productIds, origin: 'remote', scope });
    }),
    await cluster.subscribe('categoriesChanged', async ({ own }) => {
      if (!own) await bus.emit('categoriesChanged', { remote: true });
    }),
    await cluster.subscribe<MembersChanged>('membersChanged', async ({ own, payload }) => {
      if (own || !Array.isArray(payload?.memberIds)) return;
      const memberIds = payload.memberIds.filter((memberId) => Number.isSafeInteger(memberId));
      if (memberIds.length > 0) await bus.emit('membersChanged', { memberIds, remote: true });
    }),
    await cluster.subscribe('cachesStale', async ({ own }) => {
      if (!own) await bus.emit('cachesStale');
    }),
    // This instance's announcements made while it was away were dropped (the client discards what it buffered),
    // and instances that stayed connected would not know: they are told to drop everything too.
    cluster.onReconnected(() => {
      cluster.publish('cachesStale', {});
      return bus.emit('cachesStale');
    }),
  ];
  return () => {
    for (const off of offs) off();
  };
}
