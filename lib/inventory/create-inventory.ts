// Builds the inventory of the configured mode. After any commit that changed stock, both modes announce
// the changed products through the catalog's hook (awaited, so the client that made the change never
// reads a stale copy); changes announced by other areas make the product's actor re-read.
import type { Config } from '../config';
import type { Db } from '../db';
import type { CatalogHooks } from '../events';
import type { Logger } from '../logger';
import { createActorInventory } from './actor-inventory';
import { createClusteredInventory, type ShardRouter } from './clustered-inventory';
import type { AnnounceChanges, Inventory, StockWriter } from './inventory';
import { createTransactionalInventory } from './transactional-inventory';

export interface InventoryDeps {
  config: Config;
  db: Db;
  logger: Logger;
  catalog: CatalogHooks;
  /** Named hook for metrics: the size of each committed group-commit batch (actor mode only). */
  onBatchCommitted?: (size: number) => void;
  /**
   * Named hook: a placement committed in THIS process (its writer's rows, the outbox's among them, are in the
   * database): the notification dispatcher's kick. In a cluster it runs on the owner that committed, not on
   * the instance that forwarded the request, so only the dispatcher that can see the rows first wakes.
   */
  onPlaced?: () => void;
  /** Cluster mode: requests to take stock run on the owner of their first product (actor mode only). */
  cluster?: ShardRouter;
  /** The writers a forwarded request may name (cluster mode). */
  writers: Array<StockWriter<unknown, unknown>>;
}

/** Cluster mode's owner-side hooks of the inventory (absent in one process and in transactional mode). */
export interface ShardHooks {
  /** Answers a request forwarded to this instance as the owner of its shard. */
  handle(payload: unknown): Promise<unknown>;
  /** The shard moved to another instance: its actors here stop. */
  shardLost(shard: number): number;
}

export function createInventory(deps: InventoryDeps): Inventory & Partial<ShardHooks> {
  // One event for all the products (a batch's), not one per product.
  const announce: AnnounceChanges = (productIds, scope) =>
    deps.catalog.productsChanged(productIds, 'inventory', scope);

  if (deps.config.inventoryMode === 'transactional')
    return createTransactionalInventory({
      db: deps.db,
      logger: deps.logger,
      announce,
      onPlaced: deps.onPlaced,
    });
  const inventory = createActorInventory({
    db: deps.db,
    logger: deps.logger,
    idleMs: deps.config.actorIdleMs,
    announce,
    onBatchCommitted: deps.onBatchCommitted,
    onPlaced: deps.onPlaced,
  });
  // A product edited elsewhere (name, price, status, stock): its actor re-reads before deciding again.
  deps.catalog.onProductsChanged((productIds, origin) => {
    if (origin !== 'inventory') for (const productId of productIds) inventory.registry.reload(productId);
  });
  deps.catalog.onCachesStale(() => inventory.registry.reloadAll());
  if (!deps.cluster) return inventory;
  return createClusteredInventory({
    local: inventory,
    router: deps.cluster,
    writers: deps.writers,
    logger: deps.logger,
    // As the owner's own event will say (origin `remote`: not published again). The order stands whatever this does.
    changedElsewhere: (productIds) =>
      deps.catalog
        .productsChanged(productIds, 'remote', 'stock')
        .catch((err: unknown) =>
          deps.logger.error({ err }, 'Dropping the copies of products changed on their owner failed'),
        ),
  });
}
