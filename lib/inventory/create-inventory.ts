// Builds the inventory of the configured mode, and the after-commit step both modes share: announce
// every changed product on the event bus (the catalog drops its caches; awaited, so the client that
// made the change never reads a stale copy) and wake the notification dispatcher.
import type { Config } from '../config';
import type { Db } from '../db';
import type { EventBus } from '../events';
import type { Logger } from '../logger';
import type { NotificationDispatcher } from '../notifications/dispatcher';
import { createActorInventory } from './actor-inventory';
import type { Inventory } from './inventory';
import { createTransactionalInventory } from './transactional-inventory';

export interface InventoryDeps {
  config: Config;
  db: Db;
  logger: Logger;
  events: EventBus;
  dispatcher: NotificationDispatcher;
}

export function createInventory(deps: InventoryDeps) {
  // Our own announcements, recognised by identity: only changes made elsewhere make an actor re-read.
  const ours = new WeakSet<object>();
  async function announce(productIds: number[]): Promise<void> {
    for (const productId of new Set(productIds)) {
      const payload = { productId };
      ours.add(payload);
      await deps.events.emit('productChanged', payload);
    }
  }
  async function afterCommit(productIds: number[]): Promise<void> {
    deps.dispatcher.kick();
    await announce(productIds);
  }

  let inventory: Inventory;
  if (deps.config.inventoryMode === 'actor') {
    const actorInventory = createActorInventory({
      db: deps.db,
      logger: deps.logger,
      idleMs: deps.config.actorIdleMs,
      afterCommit,
    });
    // A product edited elsewhere (name, price, status, stock): its actor re-reads before deciding again.
    deps.events.on('productChanged', (payload) => {
      if (!ours.has(payload)) actorInventory.registry.reload(payload.productId);
    });
    inventory = actorInventory;
  } else {
    inventory = createTransactionalInventory({ db: deps.db, afterCommit });
  }
  return { inventory, afterCommit };
}
