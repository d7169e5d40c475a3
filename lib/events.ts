// The in-process domain event bus (emittery). Areas announce changes here instead of calling each other,
// e.g. anything that changes a product (stock from orders, images, edits) emits `productsChanged`, and the
// catalog drops its cached copies. `await bus.emit(...)` resolves after every listener ran, so a response
// sent after it never shows stale data to the client that made the change.
// Products changed the same way at once travel as ONE event (a group-commit batch announces its products
// together): an event costs each listener's call and emittery's promises, per event, not per product.
import Emittery from 'emittery';

/**
 * Which area made a product change; an area ignores the changes it made itself. `remote`: another instance
 * of the cluster made it (lib/cluster/app-events.ts brings it here).
 */
export type ProductChangeOrigin = 'catalog' | 'images' | 'inventory' | 'remote';

/**
 * What a product change touched, when less than anything: `stock` (an order or a cancellation: stock, sales
 * and ON_SALE <-> SOLD_OUT only) or `images`. Absent: anything may have changed.
 */
export type ProductChangeScope = 'stock' | 'images';

export const PRODUCT_CHANGE_SCOPES: readonly ProductChangeScope[] = ['stock', 'images'];

/** Products that changed, all made by one area and all touching `scope` (absent: anything). */
export interface ProductsChanged {
  /** Distinct ids (an event with none is never emitted). */
  productIds: readonly number[];
  origin?: ProductChangeOrigin;
  scope?: ProductChangeScope;
}

export interface DomainEvents {
  productsChanged: ProductsChanged;
  /** The category tree changed (`remote`: on another instance). */
  categoriesChanged: { remote?: boolean };
  /**
   * Members whose access tokens stopped holding (a password change bumped their token version): every copy of
   * their version is dropped (`remote`: the change was made on another instance).
   */
  membersChanged: { memberIds: readonly number[]; remote?: boolean };
  /** Change events may have been missed (the cluster connection came back): drop every cached copy. */
  cachesStale: undefined;
}

export type EventBus = Emittery<DomainEvents>;

export function createEventBus(): EventBus {
  return new Emittery<DomainEvents>();
}

/** The catalog's named hook: announce a product change and learn of others'. */
export interface CatalogHooks {
  /**
   * Announces the products in one event (duplicates dropped; nothing when there are none). Resolves after
   * every listener ran (the catalog's caches are dropped).
   */
  productsChanged(
    productIds: Iterable<number>,
    origin: ProductChangeOrigin,
    scope?: ProductChangeScope,
  ): Promise<void>;
  onProductsChanged(
    listener: (productIds: readonly number[], origin: ProductChangeOrigin | undefined) => void,
  ): void;
  /** Change events may have been missed: whatever is held in memory must be re-read. */
  onCachesStale(listener: () => void): void;
}

export function createCatalogHooks(bus: EventBus): CatalogHooks {
  return {
    async productsChanged(productIds, origin, scope) {
      const distinct = [...new Set(productIds)];
      if (distinct.length > 0) await bus.emit('productsChanged', { productIds: distinct, origin, scope });
    },
    onProductsChanged(listener) {
      bus.on('productsChanged', ({ productIds, origin }) => listener(productIds, origin));
    },
    onCachesStale(listener) {
      bus.on('cachesStale', listener);
    },
  };
}
