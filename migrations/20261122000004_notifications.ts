import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Transactional outbox: written in the same transaction as the change that causes the event.
  await knex.schema.createTable('notification_outbox', (t) => {
    t.bigIncrements('id').primary();
    t.string('event_type', 50).notNullable();
    t.integer('recipient_id').unsigned().notNullable().references('members.id');
    t.text('payload').notNullable();
    t.string('request_id', 64).nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.datetime('next_attempt_at', { precision: 3 }).notNullable();
    t.datetime('delivered_at', { precision: 3 }).nullable();
    t.text('last_error').nullable();
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.index(['delivered_at', 'next_attempt_at'], 'notification_outbox_pending_index');
  });

  await knex.schema.createTable('notifications', (t) => {
    t.bigIncrements('id').primary();
    t.integer('member_id').unsigned().notNullable().references('members.id');
    // One notification per outbox row: at-least-once delivery collapses to exactly-once visibility.
    t.bigInteger('outbox_id').unsigned().notNullable().unique('notifications_outbox_unique');
    t.string('type', 50).notNullable();
    t.text('payload').notNullable();
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.datetime('read_at', { precision: 3 }).nullable();
    t.index(['member_id', 'id'], 'notifications_member_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('notifications');
  await knex.schema.dropTable('notification_outbox');
}
