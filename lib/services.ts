// Wires the services of every area from the shared dependencies. Services never see Koa's ctx.
import type { Config } from './config';
import type { Db } from './db';
import type { Logger } from './logger';
import { createTokenService } from './auth/tokens';
import { createHealthService } from './health/health-service';
import { createEventBus } from './events';

export interface Deps {
  config: Config;
  db: Db;
  logger: Logger;
}

export function createServices(deps: Deps) {
  const events = createEventBus();
  const tokens = createTokenService(deps.config.jwt);
  const health = createHealthService(deps);
  return {
    events,
    tokens,
    health,
    /** Starts background work (actors, dispatchers) once the database is migrated. */
    async start(): Promise<void> {},
    /** Flushes and stops background work; the database pool is closed by the caller afterwards. */
    async stop(): Promise<void> {},
  };
}

export type Services = ReturnType<typeof createServices>;
