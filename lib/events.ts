// The in-process domain event bus (emittery). Areas announce changes here instead of calling each other,
// e.g. anything that changes a product (stock from orders, images, edits) emits `productChanged`, and the
// catalog drops its cached copies. `await bus.emit(...)` resolves after every listener ran, so a response
// sent after it never shows stale data to the client that made the change.
import Emittery from 'emittery';

export interface DomainEvents {
  productChanged: { productId: number };
}

export type EventBus = Emittery<DomainEvents>;

export function createEventBus(): EventBus {
  return new Emittery<DomainEvents>();
}
