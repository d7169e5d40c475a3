// Group commit: one queue per process that writes every waiting order request (already reserved in
// memory by the product actors) in ONE transaction: one guarded stock UPDATE per product, multi-row
// INSERTs for orders, items, history and outbox. Requests that arrive while a flush is in flight wait
// for the next one, so the batch grows with the load (PERF-NOTES.md: batching pays for hot AND spread
// load). A request is answered only after the transaction holding its deduction committed. Any
// failure releases every reservation of the batch and writes nothing; when a guard refuses (another
// process sold the stock) the product's actor re-reads the database and each request decides again.
import type { Db } from '../lib/db';
import { isDeadlock } from '../lib/db';
import type { Logger } from '../lib/logger';
import type { OrderJson } from '../lib/orders/order-json';
import { writePlacements, type Placement } from '../lib/orders/order-writer';
import { deductStockBatch, totalsByProduct } from '../lib/inventory/stock-sql';
import type { Reservation, StockRegistry } from './registry';

/** The batch was rolled back for a reason that deciding again may fix; the reservations are released. */
export class RetryPlacement extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RetryPlacement';
  }
}

class GuardRefused extends Error {
  constructor(readonly productIds: number[]) {
    super(`Stock guard refused products ${productIds.join(', ')}`);
  }
}

interface QueuedPlacement {
  placement: Placement;
  reservations: Reservation[];
  resolve: (orders: OrderJson[]) => void;
  reject: (err: unknown) => void;
}

export interface CommitterOptions {
  db: Db;
  logger: Logger;
  registry: StockRegistry;
  /** After a commit: announce the changed products, wake the notification dispatcher. */
  afterCommit: (productIds: number[]) => Promise<void>;
  maxBatch?: number;
}

export function createOrderCommitter(options: CommitterOptions) {
  const { db, registry } = options;
  const log = options.logger.child({ component: 'OrderCommitter' });
  const maxBatch = options.maxBatch ?? 256;
  const queue: QueuedPlacement[] = [];
  let flushing: Promise<void> | null = null;
  const finishing = new Set<Promise<void>>();
  let batches = 0;
  let committedPlacements = 0;

  async function commitBatch(batch: QueuedPlacement[]): Promise<void> {
    const changes = totalsByProduct(batch.flatMap((entry) => entry.reservations));
    let results: OrderJson[][];
    try {
      results = await db.transaction(async (trx) => {
        const now = new Date();
        if (!(await deductStockBatch(trx, changes, now)))
          throw new GuardRefused(changes.map((change) => change.productId));
        return writePlacements(
          trx,
          batch.map((entry) => entry.placement),
          now,
        );
      });
    } catch (err) {
      for (const entry of batch) for (const reservation of entry.reservations) registry.release(reservation);
      if (err instanceof GuardRefused) {
        for (const productId of err.productIds) registry.reload(productId);
        for (const entry of batch) entry.reject(new RetryPlacement(err.message));
      } else if (isDeadlock(err)) {
        for (const entry of batch) entry.reject(new RetryPlacement('deadlock'));
      } else {
        log.error({ err }, `Group commit of ${batch.length} order request(s) failed`);
        for (const entry of batch) entry.reject(err);
      }
      return;
    }
    batches++;
    committedPlacements += batch.length;
    for (const entry of batch) for (const reservation of entry.reservations) registry.committed(reservation);
    // Answer after the announcements (caches dropped), without holding up the next batch.
    const done = options
      .afterCommit(changes.map((change) => change.productId))
      .catch((err) => log.error({ err }, 'After-commit work failed'))
      .then(() => batch.forEach((entry, index) => entry.resolve(results[index])));
    finishing.add(done);
    void done.finally(() => finishing.delete(done));
  }

  /** Starts the flush loop unless it runs; it clears `flushing` in the same tick the queue is found empty. */
  function startFlushing(): void {
    if (flushing) return;
    flushing = (async () => {
      try {
        while (queue.length > 0) await commitBatch(queue.splice(0, maxBatch));
      } finally {
        flushing = null;
      }
    })();
  }

  return {
    /** Queues a reserved placement; resolves with its orders after its transaction committed. */
    submit(placement: Placement, reservations: Reservation[]): Promise<OrderJson[]> {
      return new Promise<OrderJson[]>((resolve, reject) => {
        queue.push({ placement, reservations, resolve, reject });
        startFlushing();
      });
    },
    stats: () => ({ batches, committedPlacements }),
    /** Waits until every queued request is committed (or failed) and answered. */
    async drain(): Promise<void> {
      while (flushing || finishing.size > 0) {
        if (flushing) await flushing;
        await Promise.all([...finishing]);
      }
    },
  };
}

export type OrderCommitter = ReturnType<typeof createOrderCommitter>;
