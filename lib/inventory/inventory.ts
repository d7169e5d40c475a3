// The inventory: how an order request becomes committed orders with their stock deducted. Two modes
// with the same API and guarantees (config.inventoryMode): `actor` (per-product stock actors + group
// commit, the default) and `transactional` (one transaction per order with row locks, the baseline).
import type { OrderJson, ShippingAddress } from '../orders/order-json';
import type { StockChange } from './stock-sql';

export interface PlacementRequest {
  buyerId: number;
  address: ShippingAddress;
  items: StockChange[];
  idempotencyKeyId?: number;
  requestId?: string;
}

export interface Inventory {
  readonly mode: 'actor' | 'transactional';
  /** Decides, deducts and writes one order request; resolves only after its transaction committed. */
  place(request: PlacementRequest): Promise<OrderJson[]>;
  /** Tells the inventory that a committed transaction gave `changes` back (a cancellation). */
  restored(changes: StockChange[]): void;
  /**
   * Runs a product write (a seller's stock PATCH, a soft delete) serialised with that product's orders.
   * `write` is one guarded statement (it never lets stock go below 0); the actor re-reads the product after it.
   */
  changeProduct<T>(productId: number, write: () => Promise<T>): Promise<T>;
  /** Number of product actors in memory (0 in transactional mode). */
  activeActors(): number;
  /** The in-memory view of a product's actor, or null when none is active (diagnostics, tests). */
  inspect(productId: number): { stock: number; reserved: number; status: string } | null;
  /** Finishes in-flight work (pending group commits) and stops the actors. */
  stop(): Promise<void>;
}

/** Work done after any commit that changed products or wrote outbox rows. */
export type AfterCommit = (productIds: number[]) => Promise<void>;
