// Shared counters of rate-limiter-flexible (login throttle, signup/refresh limits), so every instance on
// one database counts the same attempts and a restart forgets nothing. The column names and order are
// the library's (its MySQL store inserts positionally: key, points, expire); `expire` is epoch ms.
// Keys are sha256-hashed in code, so they are short ASCII and compare byte for byte on both databases.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limits', (t) => {
    t.string('key', 255).notNullable().primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire').nullable();
    t.index(['expire'], 'rate_limits_expire_index');
  });
  if (knex.client.config.client === 'mysql2') {
    await knex.raw(
      'ALTER TABLE rate_limits MODIFY `key` VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL',
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('rate_limits');
}
