// Accounts hardening. members.email compared byte for byte: MySQL's default collation is accent- and
// case-insensitive, so `vìctim@…` found (and logged into) `victim@…` with a login throttle bucket of its own.
// E-mails are stored normalised (trimmed, lower-cased, NFC), as SQLite already compared them. token_version is
// bumped on a password change and carried in access tokens (`ver`), so a change reaches them within a minute.
import type { Knex } from 'knex';

const isMysql = (knex: Knex) => knex.client.config.client === 'mysql2';

const normalizeStoredEmail = (email: string) => email.trim().toLowerCase().normalize('NFC');

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('members', (t) => {
    t.integer('token_version').unsigned().notNullable().defaultTo(0);
  });
  const rows = (await knex('members').select('id', 'email')) as Array<{ id: number; email: string }>;
  for (const row of rows) {
    const normalized = normalizeStoredEmail(row.email);
    if (normalized !== row.email) await knex('members').where('id', row.id).update({ email: normalized });
  }
  if (isMysql(knex)) {
    await knex.raw(
      'ALTER TABLE members MODIFY email VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL',
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  if (isMysql(knex)) {
    const [rows] = await knex.raw(
      `SELECT TABLE_COLLATION AS collation FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'members'`,
    );
    const collation = String(rows[0].collation);
    if (!/^\w+$/.test(collation)) throw new Error(`unexpected collation ${collation}`);
    await knex.raw(
      `ALTER TABLE members MODIFY email VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${collation} NOT NULL`,
    );
  }
  await knex.schema.alterTable('members', (t) => {
    t.dropColumn('token_version');
  });
}
