// The scheduled pruning deletes refresh tokens by expiry, use and revocation time; without these indexes
// each pass would scan the whole table.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.index(['expires_at'], 'refresh_tokens_expires_index');
    t.index(['used_at'], 'refresh_tokens_used_index');
    t.index(['revoked_at'], 'refresh_tokens_revoked_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.dropIndex(['expires_at'], 'refresh_tokens_expires_index');
    t.dropIndex(['used_at'], 'refresh_tokens_used_index');
    t.dropIndex(['revoked_at'], 'refresh_tokens_revoked_index');
  });
}
