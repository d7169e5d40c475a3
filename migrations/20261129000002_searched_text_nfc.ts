// Text in a request body or query is taken in Unicode NFC since this change (lib/http/validate.ts), and the
// keywords are matched in NFC, so "café" finds a name sent as "cafe" + U+0301. The searched texts written before
// are brought to NFC here: products' names and descriptions (the product keyword) and members' names (the admin
// keyword). Only a text NFC changes is written (the product search index follows the name through its triggers
// on both databases); updated_at and the catalog version stay, since the text reads the same. Read in pages of
// ids, so a large table is never held in memory. Down keeps NFC: the spelling each text was sent in is not kept.
import type { Knex } from 'knex';

const PAGE = 1000;

const nfc = (text: unknown) => (typeof text === 'string' ? text.normalize('NFC') : text);

/**
 * NFC seldom lengthens a text, but it can: about 85 code points (Devanagari letters with a nuqta, Hebrew
 * presentation forms and others) decompose into up to 3. A name whose NFC form would no longer fit its column (in
 * code points, as MySQL's VARCHAR and the API count) keeps its spelling: MariaDB would refuse the UPDATE and stop
 * the migration, SQLite would store a name over the API's limit. The API answers such a name 400 from now on.
 */
const fits = (text: unknown, maxChars: number | undefined) =>
  maxChars === undefined || typeof text !== 'string' || [...text].length <= maxChars;

async function toNfc(knex: Knex, table: string, columns: Record<string, number | undefined>): Promise<void> {
  for (let after = 0; ;) {
    const rows = (await knex(table)
      .select('id', ...Object.keys(columns))
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)) as Array<Record<string, unknown>>;
    if (rows.length === 0) return;
    for (const row of rows) {
      const change: Record<string, unknown> = {};
      for (const [column, maxChars] of Object.entries(columns)) {
        const normal = nfc(row[column]);
        if (normal !== row[column] && fits(normal, maxChars)) change[column] = normal;
      }
      if (Object.keys(change).length > 0) await knex(table).where({ id: row.id }).update(change);
    }
    after = Number(rows[rows.length - 1].id);
  }
}

export async function up(knex: Knex): Promise<void> {
  // The columns' lengths (descriptions are TEXT: 5,000 characters, tripled, still fit).
  await toNfc(knex, 'products', { name: 200, description: undefined });
  await toNfc(knex, 'members', { name: 100 });
}

export async function down(): Promise<void> {
  // Nothing to undo: NFC is the same text, and the spelling each was sent in is not kept.
}
