import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('categories', (t) => {
    t.increments('id').primary();
    t.string('name', 100).notNullable();
    // Normalised name and parent (0 for roots), so "same name under the same parent" is one unique index
    // on both databases (a nullable parent_id would let duplicate roots through).
    t.string('name_key', 100).notNullable();
    t.integer('parent_key').unsigned().notNullable().defaultTo(0);
    t.integer('parent_id').unsigned().nullable().references('categories.id');
    t.integer('display_order').notNullable().defaultTo(0);
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.unique(['parent_key', 'name_key'], { indexName: 'categories_parent_name_unique' });
    t.index(['display_order', 'id'], 'categories_display_order_index');
  });

  await knex.schema.createTable('products', (t) => {
    t.increments('id').primary();
    t.integer('seller_id').unsigned().notNullable().references('members.id');
    t.integer('category_id').unsigned().notNullable().references('categories.id');
    t.string('name', 200).notNullable();
    t.text('description').nullable();
    t.decimal('price', 12, 2).notNullable();
    t.integer('stock_quantity').notNullable();
    t.string('status', 10).notNullable();
    t.integer('sales_count').notNullable().defaultTo(0);
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.datetime('updated_at', { precision: 3 }).notNullable();
    t.index(['created_at', 'id'], 'products_created_index');
    t.index(['seller_id', 'created_at', 'id'], 'products_seller_created_index');
    t.index(['category_id', 'created_at', 'id'], 'products_category_created_index');
    t.index(['status', 'created_at', 'id'], 'products_status_created_index');
    t.index(['status', 'sales_count', 'id'], 'products_status_sales_index');
    t.index(['status', 'price', 'id'], 'products_status_price_index');
  });

  await knex.schema.createTable('product_images', (t) => {
    t.increments('id').primary();
    t.integer('product_id').unsigned().notNullable().references('products.id').onDelete('CASCADE');
    t.string('image_url', 500).notNullable();
    t.string('file_name', 100).notNullable();
    t.integer('display_order').notNullable();
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.index(['product_id', 'display_order'], 'product_images_product_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_images');
  await knex.schema.dropTable('products');
  await knex.schema.dropTable('categories');
}
