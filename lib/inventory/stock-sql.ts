// The SQL half of the stock rule: every deduction is a guarded UPDATE (`... WHERE stock_quantity >= ?`,
// affected rows checked), so no process can oversell whatever its in-memory view says. Both inventory
// modes and cancellations use these statements.
import type { Knex } from 'knex';
import { affectedRows, toCents } from '../db';
import { ConflictError, NotFoundError, type AppError } from '../errors';
import type { ProductStatus } from '../products/product-model';

/** What ordering needs to know about a product: identity, snapshot fields and stock. */
export interface ProductView {
  id: number;
  sellerId: number;
  name: string;
  priceCents: number;
  status: ProductStatus;
  stock: number;
}

interface ProductRow {
  id: number;
  seller_id: number;
  name: string;
  price: string | number;
  status: ProductStatus;
  stock_quantity: number;
}

const COLUMNS = ['id', 'seller_id', 'name', 'price', 'status', 'stock_quantity'];

function toView(row: ProductRow): ProductView {
  return {
    id: row.id,
    sellerId: row.seller_id,
    name: row.name,
    priceCents: toCents(row.price),
    status: row.status,
    stock: row.stock_quantity,
  };
}

/** Reads products by id, in id order; `forUpdate` locks them (MySQL; SQLite serialises writers anyway). */
export async function loadProductViews(
  db: Knex,
  ids: number[],
  options: { forUpdate?: boolean } = {},
): Promise<Map<number, ProductView>> {
  const query = db('products').whereIn('id', ids).orderBy('id').select(COLUMNS);
  if (options.forUpdate) query.forUpdate();
  const rows = (await query) as ProductRow[];
  return new Map(rows.map((row) => [row.id, toView(row)]));
}

export async function loadProductView(db: Knex, id: number): Promise<ProductView | null> {
  return (await loadProductViews(db, [id])).get(id) ?? null;
}

export type RefusalReason = 'NOT_FOUND' | 'NOT_ON_SALE' | 'INSUFFICIENT_STOCK';

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

/** The client-facing error of a refusal (API.md: 404 for unknown/deleted, 409 otherwise, naming the product). */
export function refusalError(reason: RefusalReason, productId: number, name?: string): AppError {
  const label = name ? `product ${productId} (${name})` : `product ${productId}`;
  if (reason === 'NOT_FOUND') return new NotFoundError(`Product ${productId} not found`);
  if (reason === 'NOT_ON_SALE')
    return new ConflictError('PRODUCT_NOT_ON_SALE', `The ${label} is not on sale`);
  return new ConflictError('INSUFFICIENT_STOCK', `Insufficient stock for ${label}`);
}

export interface StockChange {
  productId: number;
  quantity: number;
}

/**
 * Deducts each product's total in one guarded UPDATE per product (id order, so concurrent writers lock
 * rows in the same order). Returns the ids whose guard refused (another process sold the stock, or the
 * product left ON_SALE); the caller rolls back. `status` is assigned FIRST: MySQL evaluates SET
 * assignments left to right on the updated row, SQLite on the old one; first, both see the old stock.
 */
export async function deductStock(
  trx: Knex.Transaction,
  changes: StockChange[],
  now: Date,
): Promise<number[]> {
  const refused: number[] = [];
  for (const { productId, quantity } of [...changes].sort((a, b) => a.productId - b.productId)) {
    const result = await trx('products')
      .where('id', productId)
      .andWhere('status', 'ON_SALE')
      .andWhere('stock_quantity', '>=', quantity)
      .update({
        status: trx.raw("CASE WHEN stock_quantity = ? THEN 'SOLD_OUT' ELSE status END", [quantity]),
        stock_quantity: trx.raw('stock_quantity - ?', [quantity]),
        sales_count: trx.raw('sales_count + ?', [quantity]),
        updated_at: now,
      });
    if (affectedRows(result) !== 1) refused.push(productId);
  }
  return refused;
}

/**
 * The group commit's deduction: ONE guarded UPDATE for many products (a CASE per column), so a batch
 * over 64 products costs one round trip, not 64. Rows are locked in primary-key order, as the
 * per-product form does. Returns false when any product's guard refused (the caller rolls back and
 * has the products re-read); which one does not matter then, the whole batch decides again.
 */
export async function deductStockBatch(
  trx: Knex.Transaction,
  changes: StockChange[],
  now: Date,
): Promise<boolean> {
  const sorted = [...changes].sort((a, b) => a.productId - b.productId);
  for (let start = 0; start < sorted.length; start += 500) {
    const chunk = sorted.slice(start, start + 500);
    const cases = (expression: (change: StockChange) => [string, Knex.Value[]]) => {
      const parts: string[] = [];
      const bindings: Knex.Value[] = [];
      for (const change of chunk) {
        const [sql, values] = expression(change);
        parts.push(`WHEN ? THEN ${sql}`);
        bindings.push(change.productId, ...values);
      }
      return trx.raw(`CASE id ${parts.join(' ')} END`, bindings);
    };
    const result = await trx('products')
      .whereIn(
        'id',
        chunk.map((change) => change.productId),
      )
      .andWhere('status', 'ON_SALE')
      .andWhere(
        'stock_quantity',
        '>=',
        cases((change) => ['?', [change.quantity]]),
      )
      .update({
        status: cases((change) => [
          "CASE WHEN stock_quantity = ? THEN 'SOLD_OUT' ELSE status END",
          [change.quantity],
        ]),
        stock_quantity: trx.raw('stock_quantity - ?', [cases((change) => ['?', [change.quantity]])]),
        sales_count: trx.raw('sales_count + ?', [cases((change) => ['?', [change.quantity]])]),
        updated_at: now,
      });
    if (affectedRows(result) !== chunk.length) return false;
  }
  return true;
}

/** Gives cancelled quantities back (stock and salesCount) and lifts SOLD_OUT. */
export async function restoreStock(trx: Knex.Transaction, changes: StockChange[], now: Date): Promise<void> {
  for (const { productId, quantity } of [...changes].sort((a, b) => a.productId - b.productId)) {
    await trx('products')
      .where('id', productId)
      .update({
        status: trx.raw("CASE WHEN status = 'SOLD_OUT' THEN 'ON_SALE' ELSE status END"),
        stock_quantity: trx.raw('stock_quantity + ?', [quantity]),
        sales_count: trx.raw('CASE WHEN sales_count >= ? THEN sales_count - ? ELSE 0 END', [
          quantity,
          quantity,
        ]),
        updated_at: now,
      });
  }
}

/** Sums quantities per product. */
export function totalsByProduct(lines: Iterable<StockChange>): StockChange[] {
  const totals = new Map<number, number>();
  for (const line of lines) totals.set(line.productId, (totals.get(line.productId) ?? 0) + line.quantity);
  return [...totals]
    .map(([productId, quantity]) => ({ productId, quantity }))
    .sort((a, b) => a.productId - b.productId);
}
