// Baseline mode: the conventional design. One transaction per order request: lock the products with
// SELECT ... FOR UPDATE in id order (no deadlock between carts), judge, deduct with the guarded UPDATE,
// write the orders. SQLite ignores FOR UPDATE but runs one writer at a time.
import type { Db } from '../db';
import { isDeadlock } from '../db';
import { assertAmountsFit, writePlacements, type PlacementLine } from '../orders/order-writer';
import type { AfterCommit, Inventory, PlacementRequest } from './inventory';
import { deductStock, judgeLine, loadProductViews, refusalError, totalsByProduct } from './stock-sql';

const MAX_ATTEMPTS = 5;

export function createTransactionalInventory({
  db,
  afterCommit,
}: {
  db: Db;
  afterCommit: AfterCommit;
}): Inventory {
  return {
    mode: 'transactional',

    async place(request: PlacementRequest) {
      const items = [...request.items].sort((a, b) => a.productId - b.productId);
      for (let attempt = 1; ; attempt++) {
        try {
          const orders = await db.transaction(async (trx) => {
            const views = await loadProductViews(
              trx,
              items.map((item) => item.productId),
              { forUpdate: true },
            );
            const lines: PlacementLine[] = [];
            for (const item of items) {
              const view = views.get(item.productId) ?? null;
              const reason = judgeLine(view, item.quantity);
              if (reason) throw refusalError(reason, item.productId, view?.name);
              lines.push({ product: view!, quantity: item.quantity });
            }
            assertAmountsFit(lines);
            const now = new Date();
            const refused = await deductStock(trx, totalsByProduct(items), now);
            if (refused.length > 0)
              throw refusalError('INSUFFICIENT_STOCK', refused[0], views.get(refused[0])?.name);
            const [written] = await writePlacements(
              trx,
              [
                {
                  buyerId: request.buyerId,
                  address: request.address,
                  lines,
                  idempotencyKeyId: request.idempotencyKeyId,
                  requestId: request.requestId,
                },
              ],
              now,
            );
            return written;
          });
          await afterCommit(items.map((item) => item.productId));
          return orders;
        } catch (err) {
          if (isDeadlock(err) && attempt < MAX_ATTEMPTS) continue;
          throw err;
        }
      }
    },

    restored() {
      // Nothing is cached in this mode.
    },

    changeProduct(_productId, write) {
      return write();
    },

    activeActors: () => 0,
    inspect: () => null,
    async stop() {},
  };
}
