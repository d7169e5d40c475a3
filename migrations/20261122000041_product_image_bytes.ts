// The size of each stored (re-encoded) image, summed per seller for the image-bytes quota. Images stored
// before this migration count as 0 bytes (migrations do not read the upload directory).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('product_images', (t) => {
    t.bigInteger('byte_size').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('product_images', (t) => {
    t.dropColumn('byte_size');
  });
}
