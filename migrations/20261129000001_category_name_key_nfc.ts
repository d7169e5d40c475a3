// categories.name_key is now the lowercased name in Unicode NFC (lib/categories/category-repository.ts,
// categoryNameKey), so "Café" spelt with one code point and with "e" + U+0301 is one name under a parent. Rows
// written before keep a key of the lowercased name as sent: each key that NFC changes is written again, and a
// key that another category under the same parent already holds in NFC form is left as it is (two such
// categories existed before, and merging them would move their products; they stay two, as they were).
import type { Knex } from 'knex';

interface Row {
  id: number;
  name: string;
  name_key: string;
  parent_key: number;
}

/** Every category whose name is not plain ASCII (ASCII is always NFC). */
async function nonAscii(knex: Knex): Promise<Row[]> {
  const rows = (await knex('categories').select('id', 'name', 'name_key', 'parent_key')) as Row[];
  return rows.filter((row) => /\P{ASCII}/u.test(row.name));
}

async function rekey(knex: Knex, keyOf: (name: string) => string): Promise<void> {
  await knex.transaction(async (trx) => {
    const taken = new Set(
      ((await trx('categories').select('parent_key', 'name_key')) as Row[]).map(
        (row) => `${row.parent_key}\u0000${row.name_key}`,
      ),
    );
    for (const row of await nonAscii(trx)) {
      const key = keyOf(row.name);
      if (key === row.name_key || taken.has(`${row.parent_key}\u0000${key}`)) continue;
      await trx('categories').where({ id: row.id }).update({ name_key: key });
      taken.delete(`${row.parent_key}\u0000${row.name_key}`);
      taken.add(`${row.parent_key}\u0000${key}`);
    }
  });
}

export async function up(knex: Knex): Promise<void> {
  await rekey(knex, (name) => name.toLowerCase().normalize('NFC'));
}

export async function down(knex: Knex): Promise<void> {
  await rekey(knex, (name) => name.toLowerCase());
}
