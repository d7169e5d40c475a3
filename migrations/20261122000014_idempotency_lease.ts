// An idempotency claim is owned by one process and kept alive by it (a lease it renews while its request
// runs); a duplicate may take a claim over only when the lease ran out, i.e. its owner is gone. Claims
// written before this migration have no owner and no lease: they count as expired (taken over at once).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.string('owner_id', 64).nullable();
    t.datetime('lease_until', { precision: 3 }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropColumn('lease_until');
    t.dropColumn('owner_id');
  });
}
