// The orders area's half of placing: what the inventory runs, for each decided order request, before
// anything is written (the amount check) and inside the transaction that deducts the stock (the INSERTs
// of order-repository.ts). The inventory knows nothing of orders beyond this StockWriter.
import { IdempotencyKeyInProgressError, ValidationError } from '../errors';
import { WriterRefused, type DecidedRequest, type StockWriter } from '../inventory/inventory';
import type { OrderJson } from './order-json';
import { insertPlacements, lostClaims, ordersExist, type Placement } from './order-repository';

/** What an order request carries besides its lines. */
export type OrderDetails = Omit<Placement, 'lines'>;

/** DECIMAL(12,2): the largest amount an order's total (and so each subtotal) can hold, in cents. */
export const MAX_AMOUNT_CENTS = 999_999_999_999;

/**
 * Refuses (400) a request whose order for some seller would not fit DECIMAL(12,2), before anything is
 * written, so one oversized cart never fails the other requests of a group commit.
 */
function assertAmountsFit({ lines }: DecidedRequest<OrderDetails>): void {
  const totals = new Map<number, number>();
  for (const line of lines) {
    totals.set(
      line.product.sellerId,
      (totals.get(line.product.sellerId) ?? 0) + line.product.priceCents * line.quantity,
    );
  }
  for (const total of totals.values()) {
    if (total > MAX_AMOUNT_CENTS) {
      throw new ValidationError('Order total is too large', [
        { field: 'orderItems', message: `an order's total must be at most ${MAX_AMOUNT_CENTS / 100}` },
      ]);
    }
  }
}

/** One order request's placed orders (one per seller). */
export const orderWriter: StockWriter<OrderDetails, OrderJson[]> = {
  name: 'orders',
  check: assertAmountsFit,
  async write(trx, batch, now) {
    const placements = batch.map((decided) => ({ ...decided.details, lines: decided.lines }));
    const lost = await lostClaims(trx, placements);
    if (lost.length > 0) {
      // Its duplicate owns the key now and answers it; this request must not order a second time.
      throw new WriterRefused(
        lost.map((index) => ({ request: batch[index], error: new IdempotencyKeyInProgressError(1) })),
      );
    }
    return insertPlacements(trx, placements, now);
  },
  committed: (db, written) =>
    ordersExist(
      db,
      written.flatMap((orders) => orders.map((order) => order.orderNumber)),
    ),
};
