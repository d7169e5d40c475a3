// Actor mode across a cluster (NATS_URL set): a product's stock actor lives in the one instance that owns the
// product's shard (lib/cluster). A request to take stock travels to the owner of its cart's first product (the
// lowest product id, so a cart always lands on the same owner whatever its item order), and runs there as it
// would in one process: its actors decide and its group commit batches it with the owner's other requests. The
// request crosses NATS as JSON and the owner runs its own writer of the same name. Everything else stays local:
// the SQL guard keeps stock exact whatever any instance's actors believe, and change events published over NATS
// make other instances' actors re-read. A product write or a cancellation made on an instance that does not own
// the product also asks the owner to re-read before its client hears back (a cancellation: also the owner of the
// cart's first product, which decided the cart with actors of its own for every product of it): those actors
// would otherwise refuse an order for the stock given back until the change event reaches them.
import { CommitOutcomeUnknownError } from '../errors';
import { OwnerDidNotAnswerError } from '../cluster/forwarding';
import type { Logger } from '../logger';
import type { Inventory, StockRequest, StockWriter } from './inventory';
import type { StockRegistry } from '../../actors/registry';

/** What the inventory needs of the cluster (lib/cluster's Cluster has it). */
export interface ShardRouter {
  /** Whether this instance serves the product's shard now. */
  isOwner(productId: number): boolean;
  shardOf(productId: number): number;
  /**
   * Runs `payload` on the owner of the product's shard (here when that is this instance); `replyBytes` bounds its
   * answer's size as JSON.
   */
  request<T>(productId: number, payload: unknown, options?: { replyBytes?: number }): Promise<T>;
}

interface PlacePayload {
  op: 'place';
  writer: string;
  request: StockRequest<unknown>;
}

/** The products changed in the database behind the actors of the instance asked: re-read before deciding again. */
interface ReloadPayload {
  op: 'reload';
  productIds: number[];
}

export interface ClusteredInventoryDeps {
  /** This instance's actor inventory: runs what this instance owns. */
  local: Inventory & { registry: StockRegistry };
  router: ShardRouter;
  /** Every writer a forwarded request may name. */
  writers: Array<StockWriter<unknown, unknown>>;
  /**
   * A request ran on another instance and changed these products there: this instance's copies go before its
   * client hears back. The owner's change event may arrive after its answer, and the client that made the change
   * must not read the old stock here.
   */
  changedElsewhere(productIds: number[]): Promise<void>;
  logger: Logger;
}

export function createClusteredInventory(deps: ClusteredInventoryDeps) {
  const { local, router } = deps;
  const writers = new Map(deps.writers.map((writer) => [writer.name, writer]));

  /**
   * Asks the instances whose actors decide these products, other than this one, to re-read them, and waits for
   * their answers (at most the forwarding's own bounds): the owner of each product, and the owner of the lowest id,
   * which decides carts of these products (`place`) with actors of its own for all of them. Never rejects: the
   * change committed, and the change event, then the actors' freshness bound, remain their other ways to learn of
   * it. Carts decided on other instances (a cart whose first product is another) learn of it those ways.
   */
  async function reloadElsewhere(productIds: number[]): Promise<void> {
    const ids = [...new Set(productIds)];
    const first = Math.min(...ids);
    await Promise.all(
      ids
        .filter((productId) => !router.isOwner(productId))
        .map((productId) =>
          router
            .request(productId, {
              op: 'reload',
              productIds: productId === first ? ids : [productId],
            } satisfies ReloadPayload)
            .catch((err: unknown) =>
              deps.logger.warn({ err }, `Asking the owner of product ${productId} to re-read it failed`),
            ),
        ),
    );
  }

  const inventory: Inventory & {
    handle(payload: unknown): Promise<unknown>;
    shardLost(shard: number): number;
    registry: StockRegistry;
  } = {
    mode: 'actor',
    registry: local.registry,

    async place<D, R>(request: StockRequest<D>, writer: StockWriter<D, R>): Promise<R> {
      if (!writers.has(writer.name))
        throw new Error(`Writer ${writer.name} is not registered for forwarding`);
      const first = Math.min(...request.items.map((item) => item.productId));
      const payload: PlacePayload = { op: 'place', writer: writer.name, request };
      const ownerBefore = router.isOwner(first);
      try {
        const result = await router.request<R>(first, payload, {
          replyBytes: writer.resultBytesAtMost?.(request),
        });
        // Ran elsewhere, or may have (the shard moved away meanwhile): a spare drop costs a re-read, a missing
        // one a stale read of the client's own write.
        if (!ownerBefore || !router.isOwner(first))
          await deps.changedElsewhere(request.items.map((item) => item.productId));
        return result;
      } catch (err) {
        // The owner may have committed before it died or slowed down: like a lost COMMIT, the client learns
        // the outcome by retrying with the same Idempotency-Key (the caller keeps its claim for this error).
        if (err instanceof OwnerDidNotAnswerError) {
          throw new CommitOutcomeUnknownError(
            err.retryAfterSeconds,
            "The instance that owns the order's first product did not answer in time",
          );
        }
        throw err;
      }
    },

    /** The owner's side of `place` and `reload` (served on the shard's subject). */
    async handle(payload: unknown): Promise<unknown> {
      const message = payload as PlacePayload | ReloadPayload;
      if (message.op === 'reload' && Array.isArray(message.productIds)) {
        for (const productId of message.productIds)
          if (Number.isSafeInteger(productId)) local.registry.reload(productId);
        return null;
      }
      const named = message.op === 'place' ? writers.get(message.writer) : undefined;
      if (message.op !== 'place' || !named)
        throw new Error(`Unknown inventory request ${String(message.op)}`);
      return local.place(message.request, named);
    },

    restore: (trx, changes, now) => local.restore(trx, changes, now),

    // The local actors adopt the stock and the catalog hears of it; the deciding instances re-read before the client
    // hears back.
    async restored(changes) {
      await local.restored(changes);
      if (changes.length > 0) await reloadElsewhere(changes.map((change) => change.productId));
    },

    async changeProduct<T>(productId: number, write: () => Promise<T>): Promise<T> {
      // The owner serialises the write with its orders; elsewhere the write's own SQL guard suffices, and the
      // owner re-reads the product after it.
      if (router.isOwner(productId)) return local.changeProduct(productId, write);
      const result = await write();
      await reloadElsewhere([productId]);
      return result;
    },

    /** A shard moved away: its idle actors stop (a new owner reads the database afresh). */
    shardLost: (shard) => local.registry.evict((productId) => router.shardOf(productId) === shard),

    inspect: (productId) => local.inspect(productId),
    activeActors: () => local.activeActors(),
    stop: () => local.stop(),
  };
  return inventory;
}

export type ClusteredInventory = ReturnType<typeof createClusteredInventory>;
