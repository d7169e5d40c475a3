// The orders area's half of placing: what the inventory runs, for each decided order request, before
// anything is written (the amount check) and inside the transaction that deducts the stock (the INSERTs
// of order-repository.ts). The inventory knows nothing of orders beyond this StockWriter.
import { IdempotencyKeyInProgressError, ValidationError } from '../errors';
import { WriterRefused, type DecidedRequest, type StockWriter } from '../inventory/inventory';
import { checkAlone, NO_CAPS, refusedByCaps, type BuyerCaps } from './buyer-caps';
import { PRODUCT_NAME_MAX_CHARS } from '../products/product-schemas';
import type { OrderJson } from './order-json';
import { SHIPPING_ADDRESS_MAX_CHARS } from './order-schemas';
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

/**
 * What one character (code point, as the limits count them) of a string can take in JSON: 6 bytes (a control
 * character is escaped as \u00XX; any other takes at most 4 bytes of UTF-8).
 */
const JSON_BYTES_PER_CHAR = 6;
/** An order's JSON without its items: the address and room for its numbers, times and history entry. */
const ORDER_JSON_BYTES_AT_MOST = 1024 + JSON_BYTES_PER_CHAR * SHIPPING_ADDRESS_MAX_CHARS;
/** One item's JSON: the product's name and room for its numbers. */
const ITEM_JSON_BYTES_AT_MOST = 256 + JSON_BYTES_PER_CHAR * PRODUCT_NAME_MAX_CHARS;

/** One order request's placed orders (one per seller), under the operator's buyer caps (off by default). */
export function createOrderWriter(caps: BuyerCaps = NO_CAPS): StockWriter<OrderDetails, OrderJson[]> {
  return {
    name: 'orders',
    check(request) {
      assertAmountsFit(request);
      checkAlone(caps, request);
    },
    async write(trx, batch, now) {
      const placements = batch.map((decided) => ({ ...decided.details, lines: decided.lines }));
      const refused = [
        // Its duplicate owns the key now and answers it; this request must not order a second time.
        ...(await lostClaims(trx, placements)).map((index) => ({
          index,
          error: new IdempotencyKeyInProgressError(1) as Error,
        })),
        ...(await refusedByCaps(trx, caps, placements)),
      ];
      if (refused.length > 0) {
        // Only these are refused; the rest of the batch decides again (and is counted again) without them.
        const byIndex = new Map(refused.map(({ index, error }) => [index, error]));
        throw new WriterRefused([...byIndex].map(([index, error]) => ({ request: batch[index], error })));
      }
      return insertPlacements(trx, placements, now);
    },
    // At most one order per line (one per seller), each line one item.
    resultBytesAtMost: (request) =>
      64 + request.items.length * (ORDER_JSON_BYTES_AT_MOST + ITEM_JSON_BYTES_AT_MOST),
    committed: (db, written) =>
      ordersExist(
        db,
        written.flatMap((orders) => orders.map((order) => order.orderNumber)),
      ),
  };
}
