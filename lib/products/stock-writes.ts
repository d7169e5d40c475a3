// THE place where a seller's stockQuantity change and the soft delete reach the database. Both are
// guarded in SQL (`UPDATE ... WHERE id = ? AND seller_id = ? AND status <> 'DELETED'`, affected rows
// checked), so a deleted product is never revived and another seller's product is never touched.
// The inventory routes these two writes through its per-product stock actors (one writer per product),
// which is why they live apart from the other product edits.
import type { Db } from '../db';
import { affectedRows } from '../db';
import { sql, statusFollowingStockRaw } from './product-status-sql';
import { withCatalogVersion } from './product-repository';

export interface StockWrites {
  /**
   * Sets the stock of a seller's live product; the status follows the stock (actors/product-status.ts:
   * 0 -> SOLD_OUT, > 0 -> ON_SALE, a DRAFT stays a DRAFT). False when no such live product of that seller exists.
   */
  setStock(productId: number, sellerId: number, stockQuantity: number): Promise<boolean>;
  /** Marks a seller's live product DELETED. False when no such live product of that seller exists. */
  softDelete(productId: number, sellerId: number): Promise<boolean>;
}

export function createStockWrites(db: Db): StockWrites {
  const live = (productId: number, sellerId: number) =>
    db('products').where({ id: productId, seller_id: sellerId }).whereNot('status', 'DELETED');

  return {
    // Stock only: the catalog version stays (an order judged before it is still charged the right price).
    async setStock(productId, sellerId, stockQuantity) {
      const result = await live(productId, sellerId).update({
        status: statusFollowingStockRaw(db, sql('status'), sql('?', stockQuantity)),
        stock_quantity: stockQuantity,
        updated_at: new Date(),
      });
      return affectedRows(result) === 1;
    },

    async softDelete(productId, sellerId) {
      const result = await live(productId, sellerId).update(
        withCatalogVersion(db, { status: 'DELETED', updated_at: new Date() }),
      );
      return affectedRows(result) === 1;
    },
  };
}
