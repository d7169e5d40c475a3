// The catalog's two stock-changing writes (a seller's stockQuantity PATCH, the soft delete), routed
// through the inventory: in actor mode they run inside the product's actor (no reservation is decided
// while they run, and the actor adopts the result), and they keep the catalog's guarded SQL.
import type { Db } from '../db';
import { createStockWrites, type StockWrites } from '../products/stock-writes';
import type { Inventory } from './inventory';

export function createInventoryStockWrites(db: Db, inventory: Inventory): StockWrites {
  const guarded = createStockWrites(db);
  return {
    setStock: (productId, sellerId, stockQuantity, along) =>
      inventory.changeProduct(productId, () => guarded.setStock(productId, sellerId, stockQuantity, along)),
    softDelete: (productId, sellerId) =>
      inventory.changeProduct(productId, () => guarded.softDelete(productId, sellerId)),
  };
}
