// THE place where a seller's stockQuantity change and the soft delete reach the database. Both are
// guarded in SQL (`UPDATE ... WHERE id = ? AND seller_id = ? AND status <> 'DELETED'`, affected rows
// checked), so a deleted product is never revived and another seller's product is never touched.
// The inventory routes these two writes through its per-product stock actors (one writer per product),
// which is why they live apart from the other product edits; a PATCH's catalog edit goes along in the stock's
// transaction (`along`), so the two are written together or not at all.
import type { Db, Trx } from '../db';
import { affectedRows } from '../db';
import { sql, statusFollowingStockRaw } from './product-status-sql';
import { withCatalogVersion } from './product-repository';

/** Another write of the same product that must stand or fall with the stock's (a seller's catalog edit). */
export type AlongWithStock = (trx: Trx) => Promise<unknown>;

export interface StockWrites {
  /**
   * Sets the stock of a seller's live product; the status follows the stock (actors/product-status.ts:
   * 0 -> SOLD_OUT, > 0 -> ON_SALE, a DRAFT stays a DRAFT). False when no such live product of that seller exists.
   * With `along`, that write runs first in the same transaction: both are written, or neither.
   */
  setStock(
    productId: number,
    sellerId: number,
    stockQuantity: number,
    along?: AlongWithStock,
  ): Promise<boolean>;
  /** Marks a seller's live product DELETED. False when no such live product of that seller exists. */
  softDelete(productId: number, sellerId: number): Promise<boolean>;
}

export function createStockWrites(db: Db): StockWrites {
  const live = (on: Db | Trx, productId: number, sellerId: number) =>
    on('products').where({ id: productId, seller_id: sellerId }).whereNot('status', 'DELETED');

  async function writeStock(on: Db | Trx, productId: number, sellerId: number, stockQuantity: number) {
    const result = await live(on, productId, sellerId).update({
      status: statusFollowingStockRaw(db, sql('status'), sql('?', stockQuantity)),
      stock_quantity: stockQuantity,
      updated_at: new Date(),
    });
    return affectedRows(result) === 1;
  }

  return {
    // Stock only: the catalog version stays (an order judged before it is still charged the right price).
    async setStock(productId, sellerId, stockQuantity, along) {
      if (!along) return writeStock(db, productId, sellerId, stockQuantity);
      return db.transaction(async (trx) => {
        await along(trx);
        return writeStock(trx, productId, sellerId, stockQuantity);
      });
    },

    async softDelete(productId, sellerId) {
      const result = await live(db, productId, sellerId).update(
        withCatalogVersion(db, { status: 'DELETED', updated_at: new Date() }),
      );
      return affectedRows(result) === 1;
    },
  };
}
