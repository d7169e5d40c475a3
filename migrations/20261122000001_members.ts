import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('members', (t) => {
    t.increments('id').primary();
    t.string('email', 255).notNullable().unique('members_email_unique');
    t.string('password_hash', 100).notNullable();
    t.string('name', 100).notNullable();
    t.string('phone', 30).notNullable();
    t.string('role', 10).notNullable().index('members_role_index');
    t.string('business_number', 30).nullable();
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.datetime('updated_at', { precision: 3 }).notNullable();
  });

  await knex.schema.createTable('refresh_tokens', (t) => {
    t.increments('id').primary();
    t.integer('member_id').unsigned().notNullable().references('members.id').onDelete('CASCADE');
    t.string('family_id', 36).notNullable().index('refresh_tokens_family_index');
    t.string('token_hash', 64).notNullable().unique('refresh_tokens_hash_unique');
    t.datetime('expires_at', { precision: 3 }).notNullable();
    t.datetime('used_at', { precision: 3 }).nullable();
    t.datetime('revoked_at', { precision: 3 }).nullable();
    t.datetime('created_at', { precision: 3 }).notNullable();
    t.index(['member_id'], 'refresh_tokens_member_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('refresh_tokens');
  await knex.schema.dropTable('members');
}
