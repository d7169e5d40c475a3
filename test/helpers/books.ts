// The books that must balance after any fault or load: stock conserved per product, every acknowledged order
// present. Shared by the fault suite, the crash test and the cluster tests.
import type { ExecutionContext } from 'ava';
import type { Knex } from 'knex';
import type { TestApp } from './harness';

/** For every product: stock + units of non-cancelled orders = initial stock, and salesCount = those units. */
export async function assertStockConserved(
  t: ExecutionContext,
  db: Knex,
  initial: Map<number, number>,
): Promise<void> {
  const units = (await db('order_items')
    .join('orders', 'orders.id', 'order_items.order_id')
    .whereNot('orders.status', 'CANCELLED')
    .whereIn('order_items.product_id', [...initial.keys()])
    .groupBy('order_items.product_id')
    .select('order_items.product_id as productId')
    .sum({ n: 'order_items.quantity' })) as Array<{ productId: number; n: number | string }>;
  const sold = new Map(units.map((row) => [Number(row.productId), Number(row.n)]));
  for (const [id, stock] of initial) {
    const row = await db('products').where('id', id).first('stock_quantity', 'sales_count');
    t.is(row.stock_quantity + (sold.get(id) ?? 0), stock, `stock + sold = initial for product ${id}`);
    t.is(row.sales_count, sold.get(id) ?? 0, `salesCount of product ${id}`);
  }
}

/** Every order id the clients saw in a 201 exists. */
export async function assertAcknowledgedExist(t: ExecutionContext, db: Knex, ids: number[]): Promise<void> {
  const unique = [...new Set(ids)];
  const found = (await db('orders').whereIn('id', unique).select('id')) as Array<{ id: number }>;
  t.is(found.length, unique.length, 'every acknowledged (201) order is in the database');
}

/**
 * The product's actor (actor mode) holds nothing back and sees the database's stock, once a pending re-read settled;
 * true in transactional mode, which keeps no view.
 */
export async function actorAgrees(app: TestApp, productId: number, stock: number): Promise<boolean> {
  const inventory = app.bundle.services.inventory;
  if (inventory.inspect(productId) === null) return true;
  await inventory.changeProduct(productId, async () => undefined); // settles a reload
  const settled = inventory.inspect(productId);
  return settled?.stock === stock && settled.reserved === 0;
}
