// Product names and descriptions are stored in Unicode NFC since this change (lib/products/product-schemas.ts),
// and the keyword is matched in NFC, so "café" finds a name sent as "cafe" + U+0301. The products written before
// are brought to NFC here: only a text that NFC changes is written (the search index follows the name through its
// triggers on both databases); updated_at and the catalog version stay, since the text reads the same. Read in
// pages of ids, so a large catalogue is never held in memory. Down keeps NFC: the spelling sent is not known.
import type { Knex } from 'knex';

const PAGE = 1000;

interface Row {
  id: number;
  name: string;
  description: string | null;
}

const nfc = (text: string | null) => (text === null ? null : text.normalize('NFC'));

export async function up(knex: Knex): Promise<void> {
  for (let after = 0; ;) {
    const rows = (await knex('products')
      .select('id', 'name', 'description')
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)) as Row[];
    if (rows.length === 0) return;
    for (const row of rows) {
      const change: Partial<Row> = {};
      if (nfc(row.name) !== row.name) change.name = nfc(row.name)!;
      if (nfc(row.description) !== row.description) change.description = nfc(row.description);
      if (Object.keys(change).length > 0) await knex('products').where({ id: row.id }).update(change);
    }
    after = Number(rows[rows.length - 1].id);
  }
}

export async function down(): Promise<void> {
  // Nothing to undo: NFC is the same text, and the spelling each product was sent in is not kept.
}
