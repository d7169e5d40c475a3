// Categories: the whole list is cached for an hour (it changes rarely) and dropped the moment an admin
// adds one. "Same name under the same parent" is decided by the unique index (parent_key, name_key), so
// two concurrent creates cannot both win. The key is the lowercased name compared byte for byte (utf8mb4_bin
// on MySQL, migration 20261122000011): names differing in accents or emoji are distinct.
import type { Db } from '../db';
import { isForeignKeyViolation, isUniqueViolation } from '../db';
import { createCache, type CacheObserver } from '../cache';
import type { EventBus } from '../events';
import { ConflictError, ValidationError } from '../errors';
import { loadCachedDocument, type CachedDocument } from '../cached-document';
import type { CategoryJson, CreateCategoryInput } from './category-schemas';
import { createCategoryRepository, type CategoryRow } from './category-repository';

export const CATEGORY_CACHE_TTL_SECONDS = 3600;
const LIST_KEY = 'all';

export type { CategoryJson };

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

export function createCategoryService(deps: { db: Db; events: EventBus; cacheObserver?: CacheObserver }) {
  const repository = createCategoryRepository(deps.db);
  const cache = createCache<CachedDocument>(CATEGORY_CACHE_TTL_SECONDS, {
    name: 'categories',
    observer: deps.cacheObserver,
  });
  // Another instance's changes arrive as events too (lib/cluster/app-events.ts).
  deps.events.on('categoriesChanged', () => cache.del(LIST_KEY));
  deps.events.on('cachesStale', () => cache.flush());

  return {
    /** Every category by displayOrder then id, serialised once per cache fill. */
    list(): Promise<CachedDocument> {
      return loadCachedDocument(cache, LIST_KEY, async () => (await repository.all()).map(toJson));
    },

    async create(input: CreateCategoryInput): Promise<CategoryJson> {
      const parentId = input.parentId ?? null;
      if (parentId !== null && !(await repository.exists(parentId))) throw unknownParent();
      const category = { name: input.name, parentId, displayOrder: input.displayOrder };
      let insertedId: number;
      try {
        insertedId = await repository.insert(category);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new ConflictError(
            'DUPLICATE_CATEGORY',
            `A category named "${input.name}" already exists under this parent`,
          );
        }
        if (isForeignKeyViolation(err)) throw unknownParent(); // parent deleted between the check and the insert
        // Any other failure (a lost answer, a timeout) may have committed: the lists are dropped all the same,
        // and the insert's own error is what the caller gets.
        await deps.events.emit('categoriesChanged', {}).catch(() => undefined);
        throw err;
      }
      await deps.events.emit('categoriesChanged', {});
      return { id: insertedId, ...category };
    },

    exists: (categoryId: number): Promise<boolean> => repository.exists(categoryId),
  };
}

export type CategoryService = ReturnType<typeof createCategoryService>;
