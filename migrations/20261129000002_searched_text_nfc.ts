// Text in a request body or query is taken in Unicode NFC since this change (lib/http/validate.ts), and the
// keywords are matched in NFC, so "café" finds a name sent as "cafe" + U+0301. The searched texts written before
// are brought to NFC here: products' names and descriptions (the product keyword) and members' names (the admin
// keyword). Only a text NFC changes is written (the product search index follows the name through its triggers
// on both databases); updated_at and the catalog version stay, since the text reads the same. Read in pages of
// ids, so a large table is never held in memory. Down keeps NFC: the spelling each text was sent in is not kept.
import type { Knex } from 'knex';

const PAGE = 1000;

const nfc = (text: unknown) => (typeof text === 'string' ? text.normalize('NFC') : text);

async function toNfc(knex: Knex, table: string, columns: string[]): Promise<void> {
  for (let after = 0; ;) {
    const rows = (await knex(table)
      .select('id', ...columns)
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)) as Array<Record<string, unknown>>;
    if (rows.length === 0) return;
    for (const row of rows) {
      const change: Record<string, unknown> = {};
      for (const column of columns) if (nfc(row[column]) !== row[column]) change[column] = nfc(row[column]);
      if (Object.keys(change).length > 0) await knex(table).where({ id: row.id }).update(change);
    }
    after = Number(rows[rows.length - 1].id);
  }
}

export async function up(knex: Knex): Promise<void> {
  await toNfc(knex, 'products', ['name', 'description']);
  await toNfc(knex, 'members', ['name']);
}

export async function down(): Promise<void> {
  // Nothing to undo: NFC is the same text, and the spelling each was sent in is not kept.
}
