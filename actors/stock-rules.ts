// The pure stock rules the product actors decide with: what ordering knows of a product, the reasons a
// line is refused, and how a line is judged. The SQL guard (lib/inventory/stock-repository.ts) enforces
// the same rule in the database; the client-facing errors of a refusal are lib/inventory/refusal-error.ts.
import type { ProductStatus } from './product-status';

/** What ordering needs to know about a product: identity, snapshot fields and stock. */
export interface ProductView {
  id: number;
  sellerId: number;
  name: string;
  priceCents: number;
  status: ProductStatus;
  stock: number;
  /**
   * The catalog version (name, price, status…) this view was read at; an order judged on it is written
   * only while the database still holds it, so no order is charged a replaced price or name.
   */
  catalogVersion: number;
}

/**
 * The most units a product holds: the most a seller may set, and where a cancellation's restore stops (units given
 * back beyond it are not added; the product answers at most this).
 */
export const MAX_STOCK = 1_000_000_000;

export type RefusalReason = 'NOT_FOUND' | 'NOT_ON_SALE' | 'INSUFFICIENT_STOCK';

/** A quantity of one product taken (an order line) or given back (a cancellation). */
export interface StockChange {
  productId: number;
  quantity: number;
}

/** A stock change judged on a product's `catalogVersion`: the guarded UPDATE requires that version. */
export interface JudgedStockChange extends StockChange {
  catalogVersion: number;
}

/** Whether `quantity` of the product can be ordered now, judged on `view` (null = unknown product). */
export function judgeLine(
  view: ProductView | null,
  quantity: number,
  available = view?.stock ?? 0,
): RefusalReason | null {
  if (!view || view.status === 'DELETED') return 'NOT_FOUND';
  if (view.status === 'DRAFT') return 'NOT_ON_SALE';
  if (view.status === 'SOLD_OUT' || available < quantity) return 'INSUFFICIENT_STOCK';
  return null;
}

/** Sums quantities per product, in product-id order (the order rows are locked in). */
export function totalsByProduct(lines: Iterable<StockChange>): StockChange[] {
  const totals = new Map<number, number>();
  for (const line of lines) totals.set(line.productId, (totals.get(line.productId) ?? 0) + line.quantity);
  return [...totals]
    .map(([productId, quantity]) => ({ productId, quantity }))
    .sort((a, b) => a.productId - b.productId);
}

/**
 * Sums judged changes per product, in product-id order. When the lines of one product were judged on
 * different catalog versions (the view was re-read in between), the ids of those products instead: such
 * a batch cannot be written as decided, every request decides again.
 */
export function judgedTotals(
  lines: Iterable<JudgedStockChange>,
): { ok: true; changes: JudgedStockChange[] } | { ok: false; productIds: number[] } {
  const versions = new Map<number, number>();
  const conflicting = new Set<number>();
  const all: JudgedStockChange[] = [];
  for (const line of lines) {
    const version = versions.get(line.productId);
    if (version === undefined) versions.set(line.productId, line.catalogVersion);
    else if (version !== line.catalogVersion) conflicting.add(line.productId);
    all.push(line);
  }
  if (conflicting.size > 0) return { ok: false, productIds: [...conflicting].sort((a, b) => a - b) };
  return {
    ok: true,
    changes: totalsByProduct(all).map((change) => ({
      ...change,
      catalogVersion: versions.get(change.productId)!,
    })),
  };
}
