// Shared by the order benchmarks: the books after an order scenario (no product below zero stock; per product,
// initial stock = stock + ordered units = stock + salesCount), the median they quote, and a MariaDB admin
// connection for creating and dropping their databases.
import knexFactory, { type Knex } from 'knex';

/** Reads the books through `db` (pass a transaction to read them in one snapshot). */
export async function checkBooks(
  db: Knex,
  initial: Map<number, number>,
): Promise<{ oversell: boolean; conserved: boolean }> {
  const sold = new Map(
    (
      (await db('order_items').groupBy('product_id').select('product_id').sum({ n: 'quantity' })) as Array<{
        product_id: number;
        n: string | number;
      }>
    ).map((row) => [row.product_id, Number(row.n)]),
  );
  const rows = (await db('products').select('id', 'stock_quantity', 'sales_count')) as Array<{
    id: number;
    stock_quantity: number;
    sales_count: number;
  }>;
  let oversell = false;
  let conserved = true;
  for (const row of rows) {
    const units = sold.get(row.id) ?? 0;
    if (row.stock_quantity < 0) oversell = true;
    if (row.stock_quantity + units !== initial.get(row.id) || row.sales_count !== units) conserved = false;
  }
  return { oversell, conserved };
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? NaN : sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export async function withAdmin<T>(mysqlUrl: string, fn: (admin: Knex) => Promise<T>): Promise<T> {
  const admin = knexFactory({ client: 'mysql2', connection: mysqlUrl });
  try {
    return await fn(admin);
  } finally {
    await admin.destroy();
  }
}
