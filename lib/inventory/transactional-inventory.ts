// Baseline mode: the conventional design. One transaction per request: lock the products with
// SELECT ... FOR UPDATE in id order (no deadlock between carts), judge, deduct with the guarded UPDATE,
// run the caller's writer. SQLite ignores FOR UPDATE but runs one writer at a time.
import type { Db } from '../db';
import { isDeadlockVictim } from '../db';
import type { Logger } from '../logger';
import { CommitNotApplied, transactionWithOutcome } from '../commit-outcome';
import { WriterRefused } from './inventory';
import { judgeLine, totalsByProduct } from '../../actors/stock-rules';
import type { AnnounceChanges, DecidedLine, Inventory, StockRequest, StockWriter } from './inventory';
import { refusalError } from './refusal-error';
import { deductStock, loadProductViews, restoreStock } from './stock-repository';

const MAX_ATTEMPTS = 5;

export function createTransactionalInventory({
  db,
  logger,
  announce,
  onPlaced,
}: {
  db: Db;
  logger: Logger;
  announce: AnnounceChanges;
  /** A placement committed here (create-inventory.ts). */
  onPlaced?: () => void;
}): Inventory {
  return {
    mode: 'transactional',

    async place<D, R>(request: StockRequest<D>, writer: StockWriter<D, R>): Promise<R> {
      const items = [...request.items].sort((a, b) => a.productId - b.productId);
      for (let attempt = 1; ; attempt++) {
        try {
          const outcome = { db, logger, committed: (written: R) => writer.committed(db, [written]) };
          const result = await transactionWithOutcome(outcome, async (trx) => {
            const views = await loadProductViews(
              trx,
              items.map((item) => item.productId),
              { forUpdate: true },
            );
            const lines: DecidedLine[] = [];
            for (const item of items) {
              const view = views.get(item.productId) ?? null;
              const reason = judgeLine(view, item.quantity);
              if (reason) throw refusalError(reason, item.productId, view);
              lines.push({ product: view!, quantity: item.quantity });
            }
            const decided = { details: request.details, lines };
            writer.check(decided);
            const now = new Date();
            // Read under lock, the catalog version cannot have moved; the guard is the same as actor mode's.
            const changes = totalsByProduct(items).map((change) => ({
              ...change,
              catalogVersion: views.get(change.productId)!.catalogVersion,
            }));
            const refused = await deductStock(trx, changes, now);
            if (refused.length > 0)
              throw refusalError('INSUFFICIENT_STOCK', refused[0], views.get(refused[0]));
            const [written] = await writer.write(trx, [decided], now);
            return written;
          });
          // Committed: the order stands whatever the announcement does (as in actor mode's group commit).
          await announce(
            items.map((item) => item.productId),
            'stock',
          ).catch((err: unknown) => logger.error({ err }, 'Announcing the committed stock changes failed'));
          onPlaced?.();
          return result;
        } catch (err) {
          // A deadlock victim, or a lost COMMIT that did not apply, wrote nothing: deciding again is safe. A lock
          // wait that timed out already waited the whole limit: it is answered 503 with Retry-After, not waited again.
          if ((isDeadlockVictim(err) || err instanceof CommitNotApplied) && attempt < MAX_ATTEMPTS) continue;
          if (err instanceof WriterRefused) throw err.refused[0].error;
          throw err;
        }
      }
    },

    restore: (trx, changes, now) => restoreStock(trx, changes, now),

    async restored(changes) {
      // Nothing is cached in this mode; only the catalog needs to hear of it. Committed: the cancellation stands
      // whatever the announcement does (as a placement does).
      await announce(
        changes.map((change) => change.productId),
        'stock',
      ).catch((err: unknown) => logger.error({ err }, 'Announcing the restored stock failed'));
    },

    changeProduct(_productId, write) {
      return write();
    },

    inspect: () => null,
    activeActors: () => 0,
    async stop() {},
  };
}
