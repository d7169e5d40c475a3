import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('orders', (t) => {
    t.increments('id').primary();
    t.string('order_number', 32).notNullable().unique('orders_order_number_unique');
    t.integer('buyer_id').unsigned().notNullable().references('members.id');
    t.string('status', 10).notNullable();
    t.decimal('total_amount', 12, 2).notNullable();
    t.string('zip_code', 20).notNullable();
    t.string('address', 255).notNullable();
    t.string('address_detail', 255).notNullable();
    t.string('receiver_name', 100).notNullable();
    t.string('receiver_phone', 30).notNullable();
    t.datetime('ordered_at', { precision: 3 }).notNullable();
    t.datetime('updated_at', { precision: 3 }).notNullable();
    t.index(['buyer_id', 'id'], 'orders_buyer_index');
    t.index(['status'], 'orders_status_index');
  });

  await knex.schema.createTable('order_items', (t) => {
    t.increments('id').primary();
    t.integer('order_id').unsigned().notNullable().references('orders.id').onDelete('CASCADE');
    t.integer('product_id').unsigned().notNullable().references('products.id');
    t.integer('seller_id').unsigned().notNullable().references('members.id');
    t.string('product_name', 200).notNullable();
    t.decimal('product_price', 12, 2).notNullable();
    t.integer('quantity').notNullable();
    t.decimal('subtotal', 12, 2).notNullable();
    t.index(['order_id'], 'order_items_order_index');
    t.index(['seller_id', 'order_id'], 'order_items_seller_index');
    t.index(['product_id'], 'order_items_product_index');
  });

  await knex.schema.createTable('order_status_history', (t) => {
    t.increments('id').primary();
    t.integer('order_id').unsigned().notNullable().references('orders.id').onDelete('CASCADE');
    t.string('from_status', 10).nullable();
    t.string('to_status', 10).notNullable();
    t.integer('changed_by').unsigned().nullable().references('members.id');
    t.datetime('changed_at', { precision: 3 }).notNullable();
    t.index(['order_id', 'id'], 'order_status_history_order_index');
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.increments('id').primary();
    t.integer('buyer_id').unsigned().notNullable().references('members.id');
    t.string('idem_key', 255).notNullable();
    t.string('request_hash', 64).notNullable();
    t.integer('response_status').nullable();
    t.text('response_body', 'mediumtext').nullable();
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.datetime('expires_at', { precision: 3 }).notNullable();
    t.unique(['buyer_id', 'idem_key'], { indexName: 'idempotency_keys_buyer_key_unique' });
    t.index(['expires_at'], 'idempotency_keys_expires_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
  await knex.schema.dropTable('order_status_history');
  await knex.schema.dropTable('order_items');
  await knex.schema.dropTable('orders');
}
