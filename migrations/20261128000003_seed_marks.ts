import type { Knex } from 'knex';

// What a seed has written once and must not write again: the demo catalogue is seeded once per database, so a
// demo category or product that an admin or the demo seller renamed or deleted stays so (a seed that looked
// them up by name wrote them again at every start).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('seed_marks', (t) => {
    t.string('name', 100).primary();
    t.datetime('applied_at', { precision: 3 }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('seed_marks');
}
