// Actor mode (the default): each product's stock actor decides reservations in memory, in product-id
// order across a cart; the order committer writes every waiting request in one transaction, guarded in
// SQL. If the guard refuses (another process sold the stock) the batch is rolled back, the actor
// re-reads, and the request decides again from the start.
import type { Db } from '../db';
import type { Logger } from '../logger';
import { ServiceUnavailableError } from '../errors';
import { assertAmountsFit, type PlacementLine } from '../orders/order-writer';
import { createStockRegistry, type Reservation } from '../../actors/registry';
import { createOrderCommitter, RetryPlacement } from '../../actors/order-committer';
import type { AfterCommit, Inventory, PlacementRequest } from './inventory';
import { refusalError } from './stock-sql';

const MAX_ATTEMPTS = 20;

export interface ActorInventoryOptions {
  db: Db;
  logger: Logger;
  idleMs: number;
  afterCommit: AfterCommit;
}

export function createActorInventory(options: ActorInventoryOptions) {
  const registry = createStockRegistry({ db: options.db, logger: options.logger, idleMs: options.idleMs });
  const committer = createOrderCommitter({
    db: options.db,
    logger: options.logger,
    registry,
    afterCommit: options.afterCommit,
  });

  const inventory: Inventory & { registry: typeof registry; committer: typeof committer } = {
    mode: 'actor',
    registry,
    committer,

    async place(request: PlacementRequest) {
      const items = [...request.items].sort((a, b) => a.productId - b.productId);
      for (let attempt = 1; ; attempt++) {
        const reservations: Reservation[] = [];
        const lines: PlacementLine[] = [];
        try {
          for (const item of items) {
            const result = await registry.reserve(item.productId, item.quantity);
            if (!result.ok) throw refusalError(result.reason, item.productId, result.product?.name);
            reservations.push(result.reservation);
            lines.push({ product: result.product, quantity: item.quantity });
          }
          assertAmountsFit(lines);
        } catch (err) {
          for (const reservation of reservations) registry.release(reservation);
          throw err;
        }
        try {
          // From here on the committer owns the reservations (commits or releases them).
          return await committer.submit(
            {
              buyerId: request.buyerId,
              address: request.address,
              lines,
              idempotencyKeyId: request.idempotencyKeyId,
              requestId: request.requestId,
            },
            reservations,
          );
        } catch (err) {
          if (!(err instanceof RetryPlacement)) throw err;
          if (attempt >= MAX_ATTEMPTS)
            throw new ServiceUnavailableError('Stock is changing too fast; please retry');
        }
      }
    },

    restored(changes) {
      for (const change of changes) registry.restocked(change.productId, change.quantity);
    },

    async changeProduct(productId, write) {
      let result: Awaited<ReturnType<typeof write>> | undefined;
      await registry.exclusive(productId, async () => {
        result = await write();
      });
      return result as Awaited<ReturnType<typeof write>>;
    },

    activeActors: () => registry.activeCount(),
    inspect: (productId) => registry.inspect(productId),

    async stop() {
      await committer.drain();
      registry.stop();
    },
  };
  return inventory;
}
