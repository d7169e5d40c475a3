// Indexes for the offset list's price and salesCount sorts. The default visibility is
// `status IN ('ON_SALE','SOLD_OUT')`, two ranges, so the (status, price, id) index cannot return rows in
// price order and MariaDB sorted ~60k rows per page. API.md breaks ties by id DESC in both directions:
// `(price, id)` scanned backwards serves `price desc, id desc`; `(price, id DESC)` scanned forwards serves
// `price asc, id desc`. Same for sales_count. (Descending index parts: MariaDB >= 10.8, MySQL 8, SQLite.)
import type { Knex } from 'knex';

const INDEXES: Array<[string, string]> = [
  ['products_price_index', 'price, id'],
  ['products_price_asc_id_desc_index', 'price ASC, id DESC'],
  ['products_sales_index', 'sales_count, id'],
  ['products_sales_asc_id_desc_index', 'sales_count ASC, id DESC'],
];

export async function up(knex: Knex): Promise<void> {
  for (const [name, columns] of INDEXES) await knex.raw(`CREATE INDEX ${name} ON products (${columns})`);
}

export async function down(knex: Knex): Promise<void> {
  for (const [name] of INDEXES) {
    await knex.schema.alterTable('products', (t) => t.dropIndex([], name));
  }
}
