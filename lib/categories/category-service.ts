// Categories: the whole list is cached for an hour (it changes rarely) and dropped the moment an admin
// adds one. "Same name under the same parent" is decided by the unique index (parent_key, name_key), so
// two concurrent creates cannot both win. The key is the lowercased name compared byte for byte (utf8mb4_bin
// on MySQL, migration 20261122000011): names differing in accents or emoji are distinct.
import type { Db } from '../db';
import { isForeignKeyViolation, isUniqueViolation } from '../db';
import { createCache } from '../cache';
import { ConflictError, ValidationError } from '../errors';
import { representation, type Representation } from '../http/etag';
import type { CategoryJson, CreateCategoryInput } from './category-schemas';

export const CATEGORY_CACHE_TTL_SECONDS = 3600;
const LIST_KEY = 'all';

export type { CategoryJson };

interface CategoryRow {
  id: number;
  name: string;
  parent_id: number | null;
  display_order: number;
}

const toJson = (row: CategoryRow): CategoryJson => ({
  id: Number(row.id),
  name: row.name,
  parentId: row.parent_id === null ? null : Number(row.parent_id),
  displayOrder: Number(row.display_order),
});

const unknownParent = () =>
  new ValidationError('Invalid request body', [
    { field: 'parentId', message: 'parent category does not exist' },
  ]);

export function createCategoryService(deps: { db: Db }) {
  const { db } = deps;
  const cache = createCache<Representation>(CATEGORY_CACHE_TTL_SECONDS);

  return {
    /** Every category by displayOrder then id, serialised once per cache fill. */
    list(): Promise<Representation> {
      return cache.getOrLoad(LIST_KEY, async () => {
        const rows = await db<CategoryRow>('categories')
          .select('id', 'name', 'parent_id', 'display_order')
          .orderBy([
            { column: 'display_order', order: 'asc' },
            { column: 'id', order: 'asc' },
          ]);
        return representation(rows.map(toJson));
      });
    },

    async create(input: CreateCategoryInput): Promise<CategoryJson> {
      const parentId = input.parentId ?? null;
      if (parentId !== null && !(await db('categories').where({ id: parentId }).first('id')))
        throw unknownParent();
      const row = {
        name: input.name,
        name_key: input.name.toLowerCase(),
        parent_key: parentId ?? 0,
        parent_id: parentId,
        display_order: input.displayOrder,
        created_at: new Date(),
      };
      let insertedId: number;
      try {
        [insertedId] = await db('categories').insert(row);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new ConflictError(
            'DUPLICATE_CATEGORY',
            `A category named "${input.name}" already exists under this parent`,
          );
        }
        if (isForeignKeyViolation(err)) throw unknownParent(); // parent deleted between the check and the insert
        throw err;
      }
      cache.del(LIST_KEY);
      return toJson({
        id: insertedId,
        name: row.name,
        parent_id: parentId,
        display_order: row.display_order,
      });
    },

    async exists(categoryId: number): Promise<boolean> {
      return Boolean(await db('categories').where({ id: categoryId }).first('id'));
    },
  };
}

export type CategoryService = ReturnType<typeof createCategoryService>;
