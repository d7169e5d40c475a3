// Actor mode (the default): each product's stock actor decides reservations in memory, in product-id
// order across a request; the group commit writes every waiting request in one transaction, guarded in
// SQL. If the guard refuses (another process sold the stock) the batch is rolled back, the actor
// re-reads, and the request decides again from the start.
import type { Db } from '../db';
import type { Logger } from '../logger';
import { ServiceUnavailableError } from '../errors';
import { createStockRegistry, type Reservation } from '../../actors/registry';
import { createGroupCommit, RetryPlacement } from './group-commit';
import type { AnnounceChanges, DecidedLine, Inventory } from './inventory';
import { refusalError } from './refusal-error';
import { loadProductView, restoreStock } from './stock-repository';

const MAX_ATTEMPTS = 20;

export interface ActorInventoryOptions {
  db: Db;
  logger: Logger;
  idleMs: number;
  announce: AnnounceChanges;
  onBatchCommitted?: (size: number) => void;
  /** A placement committed here (create-inventory.ts). */
  onPlaced?: () => void;
  /** How long an actor refuses on a view it read before it reads again (actors/registry.ts; 100 ms by default). */
  freshMs?: number;
}

export function createActorInventory(options: ActorInventoryOptions) {
  const { db } = options;
  const registry = createStockRegistry({
    // Never while a batch is in flight (group-commit.ts, `read`).
    load: (productId) => groupCommit.read(() => loadProductView(db, productId)),
    logger: options.logger,
    idleMs: options.idleMs,
    freshMs: options.freshMs,
  });
  const groupCommit = createGroupCommit({
    db,
    logger: options.logger,
    registry,
    announce: options.announce,
    onBatchCommitted: options.onBatchCommitted,
  });

  const inventory: Inventory & { registry: typeof registry; groupCommit: typeof groupCommit } = {
    mode: 'actor',
    registry,
    groupCommit,

    async place(request, writer) {
      const items = [...request.items].sort((a, b) => a.productId - b.productId);
      // A second line of a product would wait for the first's reservation to settle, which it holds itself: the
      // request would never be answered. The orders schema refuses such a cart; here it fails instead of hanging.
      if (items.some((item, index) => index > 0 && item.productId === items[index - 1].productId))
        throw new TypeError('An inventory request names each product once');
      for (let attempt = 1; ; attempt++) {
        const reservations: Reservation[] = [];
        const lines: DecidedLine[] = [];
        try {
          for (const item of items) {
            // A ready actor answers synchronously: no await (and no microtask) per item then.
            const answer = registry.reserve(item.productId, item.quantity);
            const result = answer instanceof Promise ? await answer : answer;
            if (!result.ok) throw refusalError(result.reason, item.productId, result.product);
            reservations.push(result.reservation);
            lines.push({ product: result.product, quantity: item.quantity });
          }
          writer.check({ details: request.details, lines });
        } catch (err) {
          for (const reservation of reservations) registry.release(reservation);
          throw err;
        }
        try {
          // From here on the group commit owns the reservations (commits or releases them).
          const placed = await groupCommit.submit({ details: request.details, lines }, writer, reservations);
          options.onPlaced?.();
          return placed;
        } catch (err) {
          if (!(err instanceof RetryPlacement)) throw err;
          if (attempt >= MAX_ATTEMPTS)
            throw new ServiceUnavailableError('Stock is changing too fast; please retry');
        }
      }
    },

    restore: (trx, changes, now) => restoreStock(trx, changes, now),

    async restored(changes) {
      // Re-read, never add: the restore's COMMIT is not ordered with the actors' reads (only batches are), so a
      // read may already have seen it, and adding the units would count them twice.
      for (const change of changes) registry.reload(change.productId);
      // Committed: the cancellation stands whatever the announcement does (as a placement does).
      await options
        .announce(
          changes.map((change) => change.productId),
          'stock',
        )
        .catch((err: unknown) => options.logger.error({ err }, 'Announcing the restored stock failed'));
    },

    async changeProduct(productId, write) {
      let result: Awaited<ReturnType<typeof write>> | undefined;
      await registry.exclusive(productId, async () => {
        result = await write();
      });
      return result as Awaited<ReturnType<typeof write>>;
    },

    inspect: (productId) => registry.inspect(productId),

    activeActors: () => registry.activeCount(),

    async stop() {
      await groupCommit.drain();
      registry.stop();
    },
  };
  return inventory;
}
