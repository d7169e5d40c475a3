// Wires the services of every area from the shared dependencies. Services never see Koa's ctx.
import type { Config } from './config';
import { createDb, type Db } from './db';
import type { Logger } from './logger';
import { createTokenService } from './auth/tokens';
import { createAuthService } from './auth/auth-service';
import { createLoginThrottle } from './auth/login-throttle';
import { createMemberVersions } from './auth/member-versions';
import { createPasswordHasher } from './auth/password-hasher';
import { createPruner } from './maintenance/pruner';
import { createRefreshTokenStore } from './auth/refresh-token-store';
import { createRequestLimits } from './auth/request-limits';
import { createRateLimits } from './limits/rate-limits';
import { createMemberService } from './members/member-service';
import { createHealthService } from './health/health-service';
import { createCatalogHooks, createEventBus } from './events';
import { createOrderDiagramService } from './order-diagram/diagram-service';
import { createCategoryService } from './categories/category-service';
import { createProductService } from './products/product-service';
import { createSellerQuotas } from './products/seller-quotas';
import { createImageService } from './images/image-service';
import { createNotificationDispatcher } from './notifications/dispatcher';
import { createNotificationService } from './notifications/notification-service';
import { createInventory } from './inventory/create-inventory';
import { createInventoryStockWrites } from './inventory/inventory-stock-writes';
import { createIdempotencyStore } from './orders/idempotency';
import { createOrderService } from './orders/order-service';
import { createOrderExpiry } from './orders/order-expiry';
import { createMetrics } from './metrics/metrics';
import { countPendingOutbox, pruneDeliveredOutbox } from './notifications/outbox';
import { createOrderWriter } from './orders/order-writer';
import type { StockWriter } from './inventory/inventory';
import { bridgeAppEvents } from './cluster/app-events';
import type { Cluster } from './cluster/cluster';

/** A scrape waits at most this long for the outbox COUNT (Prometheus' default scrape timeout is 10 s). */
const OUTBOX_COUNT_TIMEOUT_MS = 1000;

export interface Deps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Cluster mode (NATS_URL set): joined in start(), left in stop(). */
  cluster?: Cluster | null;
}

export function createServices(deps: Deps) {
  const events = createEventBus();
  const metrics = createMetrics({
    logger: deps.logger,
    actorsActive: () => inventory.activeActors(),
    outboxPending: () => countPendingOutbox(deps.db, OUTBOX_COUNT_TIMEOUT_MS),
    access: { production: deps.config.env === 'production', token: deps.config.metricsToken },
  });
  const { cacheObserver } = metrics;
  const memberVersions = createMemberVersions({
    db: deps.db,
    ttlSeconds: deps.config.authMemberCacheSeconds,
    cacheObserver,
  });
  events.on('membersChanged', ({ memberIds }) => {
    for (const memberId of memberIds) memberVersions.forget(memberId);
  });
  events.on('cachesStale', () => memberVersions.forgetAll());
  const tokens = createTokenService(deps.config.jwt, memberVersions.check);
  const hasher = createPasswordHasher({ cost: deps.config.bcryptCost, ...deps.config.bcrypt });
  // On MySQL/MariaDB readiness asks the database on a connection of its own: waiting behind a busy pool is not
  // the database down. (SQLite is a file opened in this process: its one connection is the database.)
  const { database } = deps.config;
  const probeDb =
    database.client === 'mysql'
      ? createDb({ ...database, poolMax: 1 }, deps.config.dbTimeouts, deps.logger)
      : null;
  const health = createHealthService({ db: probeDb ?? deps.db });
  const dispatcher = createNotificationDispatcher({
    ...deps,
    sweepIntervalMs: deps.config.notificationSweepMs,
  });
  const notifications = createNotificationService(deps);
  // One order writer (under the operator's buyer caps): the inventory runs it for requests forwarded from
  // other instances, the order service for its own.
  const orderWriter = createOrderWriter(deps.config.orderPolicies);
  const inventory = createInventory({
    ...deps,
    catalog: createCatalogHooks(events),
    onBatchCommitted: metrics.batchCommitted,
    onPlaced: () => dispatcher.kick(),
    cluster: deps.cluster ?? undefined,
    writers: [orderWriter as StockWriter<unknown, unknown>],
  });
  const idempotency = createIdempotencyStore({ ...deps, ...deps.config.idempotency });
  const orders = createOrderService({
    db: deps.db,
    logger: deps.logger,
    inventory,
    idempotency,
    caps: deps.config.orderPolicies,
    writer: orderWriter,
    notifications: { wake: () => dispatcher.kick() },
    observer: metrics.orders,
  });
  const { pendingExpiry } = deps.config.orderPolicies;
  /** Null unless ORDER_PENDING_EXPIRY_SECONDS is set. */
  const orderExpiry = pendingExpiry
    ? createOrderExpiry({
        logger: deps.logger,
        orders,
        expiry: pendingExpiry,
        firstPassWithinSeconds: deps.config.maintenanceFirstPassSeconds,
      })
    : null;
  const orderDiagram = createOrderDiagramService();
  const categories = createCategoryService({ ...deps, events, cacheObserver });
  const quotas = createSellerQuotas(deps.config);
  const images = createImageService({ ...deps, events, quotas });
  const products = createProductService({
    ...deps,
    events,
    categories,
    stockWrites: createInventoryStockWrites(deps.db, inventory),
    quotas,
    images,
    cacheObserver,
    listCacheEntries: deps.config.productListCacheEntries,
  });
  const refreshTokens = createRefreshTokenStore({ ...deps, tokens });
  const rateLimits = createRateLimits(deps);
  const throttle = createLoginThrottle({ ...deps, rateLimits });
  const requestLimits = createRequestLimits({ ...deps, rateLimits });
  const auth = createAuthService({ ...deps, tokens, refreshTokens, hasher, throttle, requestLimits });
  const members = createMemberService({ ...deps, refreshTokens, hasher, events, throttle });
  const pruner = createPruner({
    logger: deps.logger,
    intervalSeconds: deps.config.pruneIntervalSeconds,
    firstPassWithinSeconds: deps.config.maintenanceFirstPassSeconds,
    targets: [
      { name: 'refreshTokens', prune: (now, signal) => refreshTokens.prune(now, signal) },
      { name: 'idempotencyKeys', prune: (now, signal) => idempotency.prune(now, signal) },
      { name: 'deliveredOutbox', prune: (now, signal) => pruneDeliveredOutbox(deps.db, now, signal) },
      { name: 'deletedProductImages', prune: (_now, signal) => images.pruneDeletedProducts(signal) },
      ...(deps.config.pruneOrphanImageFiles
        ? [
            {
              name: 'orphanImageFiles',
              prune: (_now: Date, signal?: AbortSignal) => images.pruneOrphanFiles(signal),
            },
          ]
        : []),
    ],
  });
  let leaveEvents: (() => void) | undefined;
  /** Serves this instance's shards, shares change events, then joins (resolves once it holds its first shards). */
  async function joinCluster(cluster: Cluster): Promise<void> {
    const { handle, shardLost } = inventory;
    cluster.serve(({ payload }) =>
      handle
        ? handle(payload)
        : Promise.reject(new Error('Only actor mode forwards requests to shard owners')),
    );
    if (shardLost) cluster.onShardLost((shard) => void shardLost(shard));
    leaveEvents = await bridgeAppEvents(events, cluster);
    await cluster.start();
  }
  return {
    events,
    metrics,
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
    orderExpiry,
    hasher,
    pruner,
    /** The cluster this instance joined (null outside cluster mode). */
    cluster: deps.cluster ?? null,
    /** Starts background work (actors, dispatchers) once the database is migrated. */
    async start(): Promise<void> {
      await images.sweepStaleUploads();
      if (deps.cluster) await joinCluster(deps.cluster);
      dispatcher.start();
      pruner.start();
      orderExpiry?.start();
      rateLimits.start();
    },
    /** Flushes and stops background work; the database pool is closed by the caller afterwards. */
    async stop(): Promise<void> {
      // A sweep in progress ends first, after the order under way: it still needs the inventory and the pool,
      // and the cluster to announce what it gave back.
      await orderExpiry?.stop();
      // Hands this instance's shards over (answers under way go out), then flushes what is left here.
      await deps.cluster?.close();
      leaveEvents?.();
      await inventory.stop();
      await dispatcher.stop();
      rateLimits.stop();
      await pruner.stop();
      memberVersions.close();
      await probeDb?.destroy();
    },
  };
}

export type Services = ReturnType<typeof createServices>;
