// Wires the services of every area from the shared dependencies. Services never see Koa's ctx.
import type { Config } from './config';
import type { Db } from './db';
import type { Logger } from './logger';
import { createTokenService } from './auth/tokens';
import { createAuthService } from './auth/auth-service';
import { createLoginThrottle } from './auth/login-throttle';
import { createRefreshTokenStore } from './auth/refresh-token-store';
import { createMemberService } from './members/member-service';
import { createHealthService } from './health/health-service';
import { createCatalogHooks, createEventBus } from './events';
import { createOrderDiagramService } from './order-diagram/diagram-service';
import { createCategoryService } from './categories/category-service';
import { createProductService } from './products/product-service';
import { createImageService } from './images/image-service';
import { createNotificationDispatcher } from './notifications/dispatcher';
import { createNotificationService } from './notifications/notification-service';
import { createInventory } from './inventory/create-inventory';
import { createInventoryStockWrites } from './inventory/inventory-stock-writes';
import { createIdempotencyStore } from './orders/idempotency';
import { createOrderService } from './orders/order-service';

export interface Deps {
  config: Config;
  db: Db;
  logger: Logger;
}

export function createServices(deps: Deps) {
  const events = createEventBus();
  const tokens = createTokenService(deps.config.jwt);
  const health = createHealthService(deps);
  const dispatcher = createNotificationDispatcher(deps);
  const notifications = createNotificationService(deps);
  const inventory = createInventory({ ...deps, catalog: createCatalogHooks(events) });
  const orders = createOrderService({
    db: deps.db,
    inventory,
    idempotency: createIdempotencyStore({ ...deps, ...deps.config.idempotency }),
    notifications: { wake: () => dispatcher.kick() },
  });
  const orderDiagram = createOrderDiagramService();
  const categories = createCategoryService(deps);
  const products = createProductService({
    ...deps,
    events,
    categories,
    stockWrites: createInventoryStockWrites(deps.db, inventory),
  });
  const refreshTokens = createRefreshTokenStore({ ...deps, tokens });
  const auth = createAuthService({ ...deps, tokens, refreshTokens, throttle: createLoginThrottle() });
  const members = createMemberService({ ...deps, refreshTokens });
  const images = createImageService({ ...deps, events });
  return {
    events,
    tokens,
    health,
    orderDiagram,
    categories,
    products,
    auth,
    members,
    images,
    dispatcher,
    notifications,
    inventory,
    orders,
    /** Starts background work (actors, dispatchers) once the database is migrated. */
    async start(): Promise<void> {
      await images.sweepStaleUploads();
      dispatcher.start();
    },
    /** Flushes and stops background work; the database pool is closed by the caller afterwards. */
    async stop(): Promise<void> {
      await inventory.stop();
      await dispatcher.stop();
      auth.stop();
    },
  };
}

export type Services = ReturnType<typeof createServices>;
