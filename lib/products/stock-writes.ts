// THE place where a seller's stockQuantity change and the soft delete reach the database. Both are
// guarded in SQL (`UPDATE ... WHERE id = ? AND seller_id = ? AND status <> 'DELETED'`, affected rows
// checked), so a deleted product is never revived and another seller's product is never touched.
// The orders area routes these two writes through its per-product inventory actors (one writer per
// product), which is why they live apart from the other product edits.
import type { Db } from '../db';
import { affectedRows } from '../db';

export interface StockWrites {
  /**
   * Sets the stock of a seller's live product; SOLD_OUT follows the stock (0 -> SOLD_OUT, > 0 -> ON_SALE)
   * unless the product is a DRAFT. False when no such live product of that seller exists.
   */
  setStock(productId: number, sellerId: number, stockQuantity: number): Promise<boolean>;
  /** Marks a seller's live product DELETED. False when no such live product of that seller exists. */
  softDelete(productId: number, sellerId: number): Promise<boolean>;
}

export function createStockWrites(db: Db): StockWrites {
  const live = (productId: number, sellerId: number) =>
    db('products').where({ id: productId, seller_id: sellerId }).whereNot('status', 'DELETED');

  return {
    async setStock(productId, sellerId, stockQuantity) {
      const result = await live(productId, sellerId).update({
        stock_quantity: stockQuantity,
        status: db.raw(`CASE WHEN status = 'DRAFT' THEN 'DRAFT' ELSE ? END`, [
          stockQuantity > 0 ? 'ON_SALE' : 'SOLD_OUT',
        ]),
        updated_at: new Date(),
      });
      return affectedRows(result) === 1;
    },

    async softDelete(productId, sellerId) {
      const result = await live(productId, sellerId).update({ status: 'DELETED', updated_at: new Date() });
      return affectedRows(result) === 1;
    },
  };
}
