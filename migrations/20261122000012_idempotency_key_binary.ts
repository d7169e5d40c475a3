// idempotency_keys.idem_key is compared by the unique index (buyer_id, idem_key). On MariaDB/MySQL it
// inherited the table's case-insensitive collation, so `CaseKey` and `casekey` were one key there but two on
// SQLite. An Idempotency-Key is an opaque token: compare it byte for byte (utf8mb4_bin), as SQLite does.
import type { Knex } from 'knex';

const isMysql = (knex: Knex) => knex.client.config.client === 'mysql2';

export async function up(knex: Knex): Promise<void> {
  if (!isMysql(knex)) return;
  await knex.raw(
    'ALTER TABLE idempotency_keys MODIFY idem_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  if (!isMysql(knex)) return;
  const [rows] = await knex.raw(
    `SELECT TABLE_COLLATION AS collation FROM information_schema.TABLES
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'idempotency_keys'`,
  );
  const collation = String(rows[0].collation);
  if (!/^\w+$/.test(collation)) throw new Error(`unexpected collation ${collation}`);
  await knex.raw(
    `ALTER TABLE idempotency_keys MODIFY idem_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE ${collation} NOT NULL`,
  );
}
