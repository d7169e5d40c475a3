// The service's Prometheus metrics (prom-client). One registry per app instance, never prom-client's global
// default, so several apps in one process (the tests) do not collide. The other areas never import
// prom-client: they are handed the small observer functions below, and the gauges read their sources only
// when scraped.
import client from 'prom-client';
import type { CacheObserver } from '../cache';
import type { Logger } from '../logger';
import { createMetricsAccess, type MetricsCaller } from './metrics-access';

export interface MetricsDeps {
  logger: Logger;
  /** Product actors held in memory now. */
  actorsActive: () => number;
  /** Outbox rows not yet delivered; a cheap, time-bounded COUNT run on each scrape. */
  outboxPending: () => Promise<number>;
  /** Production restricts scrapes to loopback or the token (lib/metrics/metrics-access.ts). */
  access: { production: boolean; token: string | null };
}

// Seconds: API requests take a few ms when cached, tens of ms for a committed order, seconds under bcrypt.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export function createMetrics(deps: MetricsDeps) {
  const registry = new client.Registry();
  const log = deps.logger.child({ component: 'Metrics' });
  client.collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const httpDuration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, matched route template and status, in seconds',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const ordersPlaced = new client.Counter({
    name: 'marketplace_orders_placed_total',
    help: 'Orders committed (one placement creates one order per seller; replays are not counted)',
    registers,
  });
  const orderRefusals = new client.Counter({
    name: 'marketplace_order_refusals_total',
    help: 'Order placements refused, by error code (INSUFFICIENT_STOCK, PRODUCT_NOT_ON_SALE, NOT_FOUND, ...)',
    labelNames: ['reason'] as const,
    registers,
  });
  new client.Gauge({
    name: 'marketplace_stock_actors_active',
    help: 'Product stock actors held in memory (0 in transactional inventory mode)',
    registers,
    collect() {
      this.set(deps.actorsActive());
    },
  });
  const batchSize = new client.Histogram({
    name: 'marketplace_group_commit_batch_size',
    help: 'Requests written per committed group-commit transaction (actor inventory mode)',
    buckets: BATCH_BUCKETS,
    registers,
  });
  new client.Gauge({
    name: 'marketplace_outbox_pending',
    help: 'Notification outbox rows not yet delivered (NaN when the count failed or timed out)',
    registers,
    async collect() {
      try {
        this.set(await deps.outboxPending());
      } catch (err) {
        // A scrape must not fail with the database: the gauge says "unknown" and the log says why.
        log.warn({ err }, 'Counting the pending outbox rows failed');
        this.set(Number.NaN);
      }
    },
  });
  const cacheRequests = new client.Counter({
    name: 'marketplace_cache_requests_total',
    help: 'In-process cache lookups by cache and result (hit, miss; joining a load in flight is a miss)',
    labelNames: ['cache', 'result'] as const,
    registers,
  });

  const access = createMetricsAccess(deps.access);
  const cacheObserver: CacheObserver = (cache, result) => cacheRequests.inc({ cache, result });

  return {
    /** GET /metrics: the Prometheus text exposition of every metric, if `caller` may read it. */
    async scrape(caller: MetricsCaller): Promise<{ contentType: string; text: string }> {
      access.check(caller);
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
    observeHttp(method: string, route: string, status: number, seconds: number): void {
      httpDuration.observe({ method, route, status }, seconds);
    },
    cacheObserver,
    /** Hooks for the orders area. */
    orders: {
      placed: (count: number) => ordersPlaced.inc(count),
      refused: (reason: string) => orderRefusals.inc({ reason }),
    },
    batchCommitted: (size: number) => batchSize.observe(size),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
