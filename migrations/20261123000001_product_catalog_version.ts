// products.catalog_version: bumped by every seller edit that changes what an order snapshots (name, price)
// or whether the product may be ordered (status, deletion), never by stock. The product actors carry the
// version they judged an order on, and the guarded stock UPDATE requires it still to hold, so an order is
// never charged a price or name that an edit (in any process) has already replaced.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('products', (t) => {
    t.integer('catalog_version').unsigned().notNullable().defaultTo(1);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('products', (t) => {
    t.dropColumn('catalog_version');
  });
}
