// categories.name_key decides "same name under the same parent" through the unique index
// (parent_key, name_key). On MariaDB/MySQL the column inherited the table's case- and accent-insensitive
// collation (utf8mb4_general_ci), which folds accents ("Café" = "Cafe") and treats all 4-byte emoji as
// equal; the key is already lowercased in code, so it must compare byte for byte (utf8mb4_bin), as
// SQLite's BINARY does. toLowerCase() can also lengthen a name (each "İ" becomes "i" + U+0307), so a
// 100-character name may need 200 characters or more; 400 leaves room (400 x 4 bytes + 4 stays under
// InnoDB's 3072-byte key limit). SQLite neither enforces VARCHAR lengths nor folds case: nothing to do.
import type { Knex } from 'knex';

const isMysql = (knex: Knex) => knex.client.config.client === 'mysql2';

export async function up(knex: Knex): Promise<void> {
  if (!isMysql(knex)) return;
  await knex.raw(
    'ALTER TABLE categories MODIFY name_key VARCHAR(400) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  if (!isMysql(knex)) return;
  // Back to the table's default collation (what the column inherited) and the original length (fails if a longer key or two keys
  // equal under that collation were stored meanwhile, rather than silently truncating or merging them).
  const [rows] = await knex.raw(
    `SELECT TABLE_COLLATION AS collation FROM information_schema.TABLES
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'categories'`,
  );
  const collation = String(rows[0].collation);
  if (!/^\w+$/.test(collation)) throw new Error(`unexpected collation ${collation}`);
  await knex.raw(
    `ALTER TABLE categories MODIFY name_key VARCHAR(100) CHARACTER SET utf8mb4 COLLATE ${collation} NOT NULL`,
  );
}
