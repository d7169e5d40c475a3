// An index that lets the keyword search's walk through the newest products (lib/products/product-repository.ts,
// KEYWORD_WINDOW_ROWS) check each row from the index alone: (created_at, id) keeps the createdAt order,
// status and name are what the walk filters on. Without it every row walked is read from the table
// (~660 lookups for a 3% keyword's first page, ~1,000 when the window falls short); with it only the page's
// rows are. Measured in bench/README.md (keyword search). Costs one more index entry per product, rewritten
// when a product's name or status changes (status: DRAFT/ON_SALE edits, SOLD_OUT and back, deletion).
// Plain CREATE INDEX on both databases: no table rebuild on SQLite, so the name index triggers stay.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'CREATE INDEX products_created_status_name_index ON products (created_at, id, status, name)',
  );
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'mysql2')
    await knex.raw('DROP INDEX products_created_status_name_index ON products');
  else await knex.raw('DROP INDEX products_created_status_name_index');
}
