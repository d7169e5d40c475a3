// The in-process domain event bus (emittery). Areas announce changes here instead of calling each other,
// e.g. anything that changes a product (stock from orders, images, edits) emits `productChanged`, and the
// catalog drops its cached copies. `await bus.emit(...)` resolves after every listener ran, so a response
// sent after it never shows stale data to the client that made the change.
import Emittery from 'emittery';

/** Which area made a product change; an area ignores the changes it made itself. */
export type ProductChangeOrigin = 'catalog' | 'images' | 'inventory';

export interface DomainEvents {
  productChanged: { productId: number; origin?: ProductChangeOrigin };
}

export type EventBus = Emittery<DomainEvents>;

export function createEventBus(): EventBus {
  return new Emittery<DomainEvents>();
}

/** The catalog's named hook: announce a product change and learn of others'. */
export interface CatalogHooks {
  /** Resolves after every listener ran (the catalog's caches are dropped). */
  productChanged(productId: number, origin: ProductChangeOrigin): Promise<void>;
  onProductChanged(listener: (productId: number, origin: ProductChangeOrigin | undefined) => void): void;
}

export function createCatalogHooks(bus: EventBus): CatalogHooks {
  return {
    productChanged: (productId, origin) => bus.emit('productChanged', { productId, origin }),
    onProductChanged(listener) {
      bus.on('productChanged', ({ productId, origin }) => listener(productId, origin));
    },
  };
}
