import type { Knex } from 'knex';

// A member's notifications are listed newest cause first: by outbox id (assigned in the cause's transaction),
// not by the notification's own id (assigned at delivery, which retries and several dispatchers reorder).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('notifications', (t) => {
    t.index(['member_id', 'outbox_id'], 'notifications_member_outbox_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('notifications', (t) => {
    t.dropIndex(['member_id', 'outbox_id'], 'notifications_member_outbox_index');
  });
}
