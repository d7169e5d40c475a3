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
}

export type RefusalReason = 'NOT_FOUND' | 'NOT_ON_SALE' | 'INSUFFICIENT_STOCK';

/** A quantity of one product taken (an order line) or given back (a cancellation). */
export interface StockChange {
  productId: number;
  quantity: number;
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
