// The SQL of the categories area. "Same name under the same parent" is the unique index
// (parent_key, name_key): the insert is what decides, so two concurrent creates cannot both win.
import type { Db } from '../db';

export interface CategoryRow {
  id: number;
  name: string;
  parent_id: number | null;
  display_order: number;
}

export interface NewCategory {
  name: string;
  parentId: number | null;
  displayOrder: number;
}

/**
 * The key that decides "same name": the name lowercased, then in Unicode NFC (as e-mails are), compared byte for
 * byte (utf8mb4_bin on MySQL). So case and the two spellings of an accented letter (one code point, or a letter and
 * a combining mark) make no second category, while names that differ by an accent or an emoji stay two.
 */
export const categoryNameKey = (name: string) => name.toLowerCase().normalize('NFC');

export function createCategoryRepository(db: Db) {
  return {
    /** Every category by display_order then id. */
    all(): Promise<CategoryRow[]> {
      return db<CategoryRow>('categories')
        .select('id', 'name', 'parent_id', 'display_order')
        .orderBy([
          { column: 'display_order', order: 'asc' },
          { column: 'id', order: 'asc' },
        ]);
    },

    async exists(categoryId: number): Promise<boolean> {
      return Boolean(await db('categories').where({ id: categoryId }).first('id'));
    },

    /** Inserts a category (throws the driver's unique or foreign-key violation); returns its id. */
    async insert(category: NewCategory): Promise<number> {
      const [insertedId] = await db('categories').insert({
        name: category.name,
        name_key: categoryNameKey(category.name),
        parent_key: category.parentId ?? 0,
        parent_id: category.parentId,
        display_order: category.displayOrder,
        created_at: new Date(),
      });
      return Number(insertedId);
    },
  };
}
