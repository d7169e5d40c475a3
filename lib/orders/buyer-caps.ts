// The operator's caps on what one buyer may hold (issue 15: one free buyer could hold a product's whole
// stock forever): ORDER_MAX_PENDING_PER_BUYER (PENDING orders at once) and ORDER_MAX_UNITS_PER_PRODUCT
// (units of one product in the buyer's OPEN orders: PENDING or CONFIRMED, the ones the buyer can still
// cancel, i.e. stock held but not yet on its way). Both off unless configured. Decided inside the
// transaction that writes the orders, after locking the buyers' member rows, so concurrent placements of
// one buyer (in one group-commit batch, in parallel transactions, or on other instances) count one after
// the other; the requests of one batch are counted together, in batch order.
import { ConflictError } from '../errors';
import type { OrderPolicies } from '../config';
import type { Db, Trx } from '../db';
import type { DecidedRequest, StockChange } from '../inventory/inventory';
import { lockBuyers, openHoldings, type Placement } from './order-repository';

export type BuyerCaps = Pick<OrderPolicies, 'maxPendingPerBuyer' | 'maxUnitsPerProduct'>;

export const NO_CAPS: BuyerCaps = { maxPendingPerBuyer: null, maxUnitsPerProduct: null };

export const capsEnabled = (caps: BuyerCaps) =>
  caps.maxPendingPerBuyer !== null || caps.maxUnitsPerProduct !== null;

/** One order per seller: the PENDING orders a request adds. */
const ordersOf = (lines: Placement['lines']) => new Set(lines.map((line) => line.product.sellerId)).size;

function pendingError(max: number, held: number): ConflictError {
  return new ConflictError(
    'ORDER_LIMIT_EXCEEDED',
    `A buyer may have at most ${max} pending orders at once (you have ${held}); wait for confirmation or cancel one`,
  );
}

function unitsError(max: number, productId: number, held: number, asked: number): ConflictError {
  return new ConflictError(
    'ORDER_LIMIT_EXCEEDED',
    `A buyer may hold at most ${max} units of product ${productId} in open (PENDING or CONFIRMED) orders (you hold ${held}, this order asks ${asked})`,
  );
}

/** Before anything is written: a request that exceeds a cap on its own (no database needed). */
export function checkAlone(caps: BuyerCaps, { lines }: DecidedRequest<unknown>): void {
  if (caps.maxPendingPerBuyer !== null && ordersOf(lines) > caps.maxPendingPerBuyer)
    throw pendingError(caps.maxPendingPerBuyer, 0);
  if (caps.maxUnitsPerProduct === null) return;
  for (const line of lines) {
    if (line.quantity > caps.maxUnitsPerProduct)
      throw unitsError(caps.maxUnitsPerProduct, line.product.id, 0, line.quantity);
  }
}

/**
 * Before the inventory reserves anything, from a plain read: a buyer already at a cap is refused without
 * costing stock reservations or a group-commit batch (a refusal inside the batch rolls it back and makes
 * its other requests decide again). Not the guarantee: refusedByCaps decides under the lock.
 */
export async function refuseEarly(
  db: Db,
  caps: BuyerCaps,
  buyerId: number,
  items: StockChange[],
): Promise<void> {
  if (!capsEnabled(caps)) return;
  const productIds = items.map((item) => item.productId);
  const { pending, units } = (await openHoldings(db, [buyerId], productIds)).get(buyerId)!;
  if (caps.maxPendingPerBuyer !== null && pending >= caps.maxPendingPerBuyer)
    throw pendingError(caps.maxPendingPerBuyer, pending);
  if (caps.maxUnitsPerProduct === null) return;
  for (const item of items) {
    const held = units.get(item.productId) ?? 0;
    if (held + item.quantity > caps.maxUnitsPerProduct)
      throw unitsError(caps.maxUnitsPerProduct, item.productId, held, item.quantity);
  }
}

/**
 * Inside the writing transaction: the placements (by index) a cap refuses, with their errors. Locks the
 * buyers' member rows first; the holdings read after the lock include every committed placement of theirs.
 */
export async function refusedByCaps(
  trx: Trx,
  caps: BuyerCaps,
  placements: Placement[],
): Promise<Array<{ index: number; error: ConflictError }>> {
  if (!capsEnabled(caps) || placements.length === 0) return [];
  const buyerIds = [...new Set(placements.map((placement) => placement.buyerId))];
  const productIds = [
    ...new Set(placements.flatMap((placement) => placement.lines.map((line) => line.product.id))),
  ];
  await lockBuyers(trx, buyerIds);
  const held = await openHoldings(trx, buyerIds, productIds);
  const refused: Array<{ index: number; error: ConflictError }> = [];
  for (const [index, placement] of placements.entries()) {
    const { pending, units } = held.get(placement.buyerId) ?? { pending: 0, units: new Map() };
    const error = capError(caps, placement, pending, units);
    if (error) {
      refused.push({ index, error });
      continue;
    }
    // Accepted: the buyer's next request in this batch counts it.
    held.set(placement.buyerId, {
      pending: pending + ordersOf(placement.lines),
      units: new Map([
        ...units,
        ...placement.lines.map(
          (line) => [line.product.id, (units.get(line.product.id) ?? 0) + line.quantity] as const,
        ),
      ]),
    });
  }
  return refused;
}

function capError(
  caps: BuyerCaps,
  placement: Placement,
  pending: number,
  units: Map<number, number>,
): ConflictError | null {
  if (caps.maxPendingPerBuyer !== null && pending + ordersOf(placement.lines) > caps.maxPendingPerBuyer)
    return pendingError(caps.maxPendingPerBuyer, pending);
  if (caps.maxUnitsPerProduct === null) return null;
  for (const line of placement.lines) {
    const heldUnits = units.get(line.product.id) ?? 0;
    if (heldUnits + line.quantity > caps.maxUnitsPerProduct)
      return unitsError(caps.maxUnitsPerProduct, line.product.id, heldUnits, line.quantity);
  }
  return null;
}
