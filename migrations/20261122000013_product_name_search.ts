// An index for the `keyword` search (a case-insensitive contains-match on products.name), which a B-tree
// cannot serve. Both are kept by triggers, so every writer (the service, the seeds, a bulk import, a raw
// INSERT) updates the index inside its own transaction, and a rollback takes the index rows with it.
// - SQLite: an FTS5 table with the trigram tokenizer over products.name (external content: it stores
//   only the index, the text stays in products).
// - MySQL/MariaDB: product_name_trigrams (trigram, product_id), every 3-character substring of
//   LOWER(name), computed by the database's own LOWER so it agrees with the search predicate's LOWER(name).
// The search keeps its exact LIKE as the final check (lib/products/keyword-index.ts): the index only
// narrows the candidates, so the results cannot change.
// Note for later migrations on SQLite: knex rebuilds a table it alters (copy, drop, rename), which drops
// the table's triggers; a migration that alters `products` there must create these triggers again.
import type { Knex } from 'knex';

const isMysql = (knex: Knex) => knex.client.config.client === 'mysql2';

/** products.name is VARCHAR(200): a trigram starts at position 1..198. */
const MAX_NAME_LENGTH = 200;

const MYSQL_INSERT_TRIGRAMS = (row: 'NEW') => `
  INSERT INTO product_name_trigrams (trigram, product_id)
  SELECT DISTINCT SUBSTRING(LOWER(${row}.name), p.n, 3), ${row}.id
    FROM product_name_trigram_positions p
   WHERE p.n <= CHAR_LENGTH(LOWER(${row}.name)) - 2`;

async function upMysql(knex: Knex): Promise<void> {
  // Compared byte for byte, as the search's `COLLATE utf8mb4_bin` compares: 'é' is not 'e'.
  await knex.raw(`
    CREATE TABLE product_name_trigrams (
      trigram VARCHAR(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      product_id INT UNSIGNED NOT NULL,
      PRIMARY KEY (trigram, product_id),
      KEY product_name_trigrams_product_index (product_id)
    ) ENGINE=InnoDB`);
  await knex.raw('CREATE TABLE product_name_trigram_positions (n SMALLINT UNSIGNED NOT NULL PRIMARY KEY)');
  await knex('product_name_trigram_positions').insert(
    Array.from({ length: MAX_NAME_LENGTH }, (_, i) => ({ n: i + 1 })),
  );
  await knex.raw(
    `CREATE TRIGGER products_name_trigrams_insert AFTER INSERT ON products FOR EACH ROW ${MYSQL_INSERT_TRIGRAMS('NEW')}`,
  );
  // Only a changed name re-indexes (compared as bytes: the column's collation would call 'Café' = 'cafe').
  // Stock and sales updates (every order) pay one comparison.
  await knex.raw(`
    CREATE TRIGGER products_name_trigrams_update AFTER UPDATE ON products FOR EACH ROW
    BEGIN
      IF NOT (BINARY NEW.name <=> BINARY OLD.name) THEN
        DELETE FROM product_name_trigrams WHERE product_id = OLD.id;
        ${MYSQL_INSERT_TRIGRAMS('NEW')};
      END IF;
    END`);
  await knex.raw(`
    CREATE TRIGGER products_name_trigrams_delete AFTER DELETE ON products FOR EACH ROW
      DELETE FROM product_name_trigrams WHERE product_id = OLD.id`);
  // Existing rows, in the same form the trigger writes.
  await knex.raw(`
    INSERT INTO product_name_trigrams (trigram, product_id)
    SELECT DISTINCT SUBSTRING(LOWER(pr.name), p.n, 3), pr.id
      FROM products pr JOIN product_name_trigram_positions p ON p.n <= CHAR_LENGTH(LOWER(pr.name)) - 2`);
}

async function upSqlite(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE VIRTUAL TABLE products_name_fts USING fts5(
      name, content = 'products', content_rowid = 'id', tokenize = 'trigram'
    )`);
  await knex.raw(`
    CREATE TRIGGER products_name_fts_insert AFTER INSERT ON products BEGIN
      INSERT INTO products_name_fts (rowid, name) VALUES (new.id, new.name);
    END`);
  await knex.raw(`
    CREATE TRIGGER products_name_fts_update AFTER UPDATE OF name ON products BEGIN
      INSERT INTO products_name_fts (products_name_fts, rowid, name) VALUES ('delete', old.id, old.name);
      INSERT INTO products_name_fts (rowid, name) VALUES (new.id, new.name);
    END`);
  await knex.raw(`
    CREATE TRIGGER products_name_fts_delete AFTER DELETE ON products BEGIN
      INSERT INTO products_name_fts (products_name_fts, rowid, name) VALUES ('delete', old.id, old.name);
    END`);
  await knex.raw(`INSERT INTO products_name_fts (products_name_fts) VALUES ('rebuild')`);
}

export async function up(knex: Knex): Promise<void> {
  if (isMysql(knex)) await upMysql(knex);
  else await upSqlite(knex);
}

export async function down(knex: Knex): Promise<void> {
  if (isMysql(knex)) {
    for (const t of ['insert', 'update', 'delete'])
      await knex.raw(`DROP TRIGGER IF EXISTS products_name_trigrams_${t}`);
    await knex.schema.dropTableIfExists('product_name_trigram_positions');
    await knex.schema.dropTableIfExists('product_name_trigrams');
  } else {
    for (const t of ['insert', 'update', 'delete'])
      await knex.raw(`DROP TRIGGER IF EXISTS products_name_fts_${t}`);
    await knex.raw('DROP TABLE IF EXISTS products_name_fts');
  }
}
