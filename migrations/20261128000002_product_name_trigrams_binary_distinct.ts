// MySQL/MariaDB: the name index of migration 20261122000013 dropped trigrams. Its triggers wrote
// `SELECT DISTINCT SUBSTRING(LOWER(name), n, 3)`, and DISTINCT compares in the name column's collation
// (utf8mb4_general_ci or _unicode_ci), which calls "afé" and "afe" one value, full-width "ｐｓ５" and "ps5" one,
// and every emoji one: of "Café cafe" only one of the pair was stored, while the search looks trigrams up byte
// for byte (utf8mb4_bin), so `keyword=cafe` missed the product. DISTINCT now compares bytes too, and the rows of
// the names that could have lost one are rebuilt. Only those: a name of printable ASCII letters has no two
// trigrams that differ in bytes yet compare equal once lowered (its only foldings are case and, in PAD SPACE
// collations, trailing spaces, which two 3-character strings cannot differ by alone).
// SQLite's FTS5 index was never affected.
// The trigger DDL commits implicitly (MySQL), so the rebuild's statements after it run each on its own, in
// autocommit: a product's rows are missing only between its batch's DELETE and INSERT. Products written meanwhile
// by an instance still running are covered: between the old triggers' drop and the new ones' creation a product
// got no trigrams at all, so such products are rebuilt too, and a rename's trigger racing a batch only ever writes
// rows the batch writes (duplicates are skipped, nothing else is).
import type { Knex } from 'knex';

const isMysql = (knex: Knex) => knex.client.config.client === 'mysql2';

/** A trigram of `row`'s lowered name, compared as the lookup compares it (`binary` false: the old form). */
const trigram = (row: 'NEW' | 'pr', binary: boolean) => {
  const text = `SUBSTRING(LOWER(${row}.name), p.n, 3)`;
  return binary ? `CONVERT(${text} USING utf8mb4) COLLATE utf8mb4_bin` : text;
};

const insertTrigrams = (binary: boolean) => `
  INSERT INTO product_name_trigrams (trigram, product_id)
  SELECT DISTINCT ${trigram('NEW', binary)}, NEW.id
    FROM product_name_trigram_positions p
   WHERE p.n <= CHAR_LENGTH(LOWER(NEW.name)) - 2`;

async function createTriggers(knex: Knex, binary: boolean): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS products_name_trigrams_insert');
  await knex.raw('DROP TRIGGER IF EXISTS products_name_trigrams_update');
  await knex.raw(
    `CREATE TRIGGER products_name_trigrams_insert AFTER INSERT ON products FOR EACH ROW ${insertTrigrams(binary)}`,
  );
  await knex.raw(`
    CREATE TRIGGER products_name_trigrams_update AFTER UPDATE ON products FOR EACH ROW
    BEGIN
      IF NOT (BINARY NEW.name <=> BINARY OLD.name) THEN
        DELETE FROM product_name_trigrams WHERE product_id = OLD.id;
        ${insertTrigrams(binary)};
      END IF;
    END`);
}

export async function up(knex: Knex): Promise<void> {
  if (!isMysql(knex)) return;
  await createTriggers(knex, true);
  // Names with a multi-byte character (anything beyond ASCII) or a control character, and names without a
  // trigram (written while no trigger was there), re-indexed in batches.
  const affected = `(LENGTH(name) <> CHAR_LENGTH(name) OR name REGEXP '[[:cntrl:]]'
    OR NOT EXISTS (SELECT 1 FROM product_name_trigrams t WHERE t.product_id = products.id))`;
  for (let after = 0; ;) {
    const ids = (
      await knex('products').whereRaw(affected).where('id', '>', after).orderBy('id').limit(1000).select('id')
    ).map((row: { id: number }) => Number(row.id));
    if (ids.length === 0) return;
    await knex('product_name_trigrams').whereIn('product_id', ids).delete();
    await knex.raw(
      `INSERT INTO product_name_trigrams (trigram, product_id)
       SELECT DISTINCT ${trigram('pr', true)}, pr.id
         FROM products pr JOIN product_name_trigram_positions p ON p.n <= CHAR_LENGTH(LOWER(pr.name)) - 2
        WHERE pr.id IN (${ids.map(() => '?').join(', ')})
       ON DUPLICATE KEY UPDATE product_id = product_name_trigrams.product_id`,
      ids,
    );
    after = ids[ids.length - 1];
  }
}

export async function down(knex: Knex): Promise<void> {
  if (!isMysql(knex)) return;
  // The old triggers; the rows the fixed ones wrote stay (a superset: the search still finds what it found).
  await createTriggers(knex, false);
}
