// The one configuration module: reads the environment once, validates it with yup, and fails fast
// with one line naming the offending variable.
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { getPublicSuffix } from 'tldts';
import * as yup from 'yup';
import { localJwtSecret } from './auth/local-jwt-secret';
export const DEFAULT_SEED_PASSWORDS = {
  admin: 'Admin123!',
  seller: 'Seller123!',
  buyer: 'Buyer123!',
} as const;

const bool = () =>
  yup
    .boolean()
    .transform((_value, original) => {
      if (original === undefined || original === '') return undefined;
      if (typeof original === 'boolean') return original;
      const text = String(original).toLowerCase();
      if (['true', '1', 'yes'].includes(text)) return true;
      if (['false', '0', 'no'].includes(text)) return false;
      return NaN; // fails the type check with a clear message
    })
    .typeError('${path} must be true or false');

const int = (min: number, max: number) =>
  yup
    .number()
    .transform((_value, original) => {
      if (original === undefined) return undefined;
      return /^\s*-?\d+\s*$/.test(String(original)) ? Number(original) : NaN;
    })
    .typeError('${path} must be an integer')
    .integer('${path} must be an integer')
    .min(min, `\${path} must be at least ${min}`)
    .max(max, `\${path} must be at most ${max}`);

// The same 8-72 byte rule as every member password, checked here so a bad one is named at start.
const seedPassword = () =>
  yup
    .string()
    .optional()
    .test('password-bytes', '${path} must be 8 to 72 bytes', (value) => {
      if (value === undefined) return true;
      const bytes = Buffer.byteLength(value, 'utf8');
      return bytes >= 8 && bytes <= 72;
    });

// A rate limit written `<points>/<seconds>` (`20/900`: 20 in 15 minutes), or `off`.
export interface RateLimit {
  points: number;
  seconds: number;
}
const rate = () =>
  yup.string().test('rate', '${path} must be <points>/<seconds> (e.g. 20/900) or off', (value) => {
    if (value === undefined || value === 'off') return true;
    const match = /^(\d{1,9})\/(\d{1,9})$/.exec(value);
    return !!match && Number(match[1]) >= 1 && Number(match[2]) >= 1;
  });
const parseRate = (value: string): RateLimit | null => {
  if (value === 'off') return null;
  const [points, seconds] = value.split('/').map(Number);
  return { points, seconds };
};

const envSchema = yup.object({
  NODE_ENV: yup.string().oneOf(['development', 'production', 'test']).default('development'),
  PORT: int(0, 65535).default(8080),
  // No default here: outside production the default is loopback only (see loadConfig).
  HOST: yup.string().optional(),
  DATABASE_URL: yup
    .string()
    .optional()
    .test('mysql-url', 'DATABASE_URL must be a mysql://user:pass@host:port/database URL', (value) => {
      if (!value) return true;
      try {
        const url = new URL(value);
        return (url.protocol === 'mysql:' || url.protocol === 'mariadb:') && url.pathname.length > 1;
      } catch {
        return false;
      }
    }),
  DB_POOL_MAX: int(1, 200).default(20),
  SQLITE_CHECKPOINT_INTERVAL_MS: int(0, 60_000).default(250),
  DATA_DIR: yup.string().default('./var'),
  UPLOAD_DIR: yup.string().optional(),
  MIGRATE_ON_START: bool().default(true),
  MIGRATE_LOCK_WAIT_MS: int(0, 3_600_000).default(60_000),
  SEED_ON_START: bool().optional(),
  SEED_ADMIN_PASSWORD: seedPassword(),
  SEED_SELLER_PASSWORD: seedPassword(),
  SEED_BUYER_PASSWORD: seedPassword(),
  JWT_SECRET: yup.string().min(32, 'JWT_SECRET must be at least 32 characters').optional(),
  JWT_ALGORITHM: yup.string().oneOf(['HS256', 'HS384', 'HS512']).default('HS256'),
  JWT_ISSUER: yup.string().default('marketplace-service'),
  JWT_AUDIENCE: yup.string().default('marketplace-api'),
  CORS_ORIGINS: yup.string().default('http://localhost:3000,http://localhost:5173'),
  LOG_LEVEL: yup.string().oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'),
  LOG_FORMAT: yup.string().oneOf(['line', 'json']).default('line'),
  BCRYPT_COST: int(4, 15).optional(),
  INVENTORY_MODE: yup.string().oneOf(['actor', 'transactional']).default('actor'),
  ACTOR_IDLE_MS: int(100, 86_400_000).default(60_000),
  SHUTDOWN_TIMEOUT_MS: int(100, 600_000).default(10_000),
  DB_CONNECT_TIMEOUT_MS: int(100, 600_000).default(5_000),
  DB_ACQUIRE_TIMEOUT_MS: int(100, 600_000).default(5_000),
  DB_STATEMENT_TIMEOUT_MS: int(100, 3_600_000).default(5_000),
  HTTP_REQUEST_TIMEOUT_MS: int(1_000, 3_600_000).default(60_000),
  HTTP_HEADERS_TIMEOUT_MS: int(1_000, 600_000).default(10_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(100, 600_000).default(5_000),
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(1_000),
  // Default by database (see loadConfig): 4 with MySQL/MariaDB, 0 (off) with SQLite.
  HTTP_REQUESTS_PER_TURN: int(0, 100_000).optional(),
  BCRYPT_CONCURRENCY: int(1, 64).optional(),
  BCRYPT_QUEUE_LIMIT: int(0, 10_000).default(32),
  AUTH_MEMBER_CACHE_SECONDS: int(1, 60).default(30),
  PRODUCT_LIST_CACHE_ENTRIES: int(0, 100_000).default(1_000),
  PRUNE_INTERVAL_SECONDS: int(1, 86_400).default(600),
  PRUNE_ORPHAN_IMAGE_FILES: bool().default(false),
  // The first pruning pass and expiry sweep after start: at a random moment within this many seconds, or `off`.
  MAINTENANCE_FIRST_PASS_SECONDS: yup
    .string()
    .test('first-pass', '${path} must be 0 to 86400 (seconds) or off', (value) => {
      if (value === undefined || value === 'off') return true;
      return /^\d{1,5}$/.test(value) && Number(value) <= 86_400;
    })
    .default('60'),
  TRUST_PROXY: bool().default(false),
  TRUST_PROXY_HOPS: int(1, 20).default(1),
  // A guessable token would open the metrics to anyone: at least 16 characters.
  METRICS_TOKEN: yup.string().optional().min(16, '${path} must be at least 16 characters'),
  LOGIN_FAILURE_LIMIT: rate()
    .test('not-off', 'LOGIN_FAILURE_LIMIT cannot be off', (value) => value !== 'off')
    .default('5/900'),
  LOGIN_EMAIL_LIMIT: rate().default('20/900'),
  LOGIN_ADDRESS_LIMIT: rate().default('100/900'),
  LOGIN_GLOBAL_LIMIT: rate().default('5000/900'),
  SIGNUP_ADDRESS_LIMIT: rate().default('30/3600'),
  SIGNUP_GLOBAL_LIMIT: rate().default('1000/3600'),
  REFRESH_ADDRESS_LIMIT: rate().default('300/60'),
  REFRESH_GLOBAL_LIMIT: rate().default('10000/60'),
  UPLOAD_MAX_PIXELS: int(1, 1_000_000_000).default(40_000_000),
  SELLER_MAX_PRODUCTS: int(1, 100_000_000).default(10_000),
  SELLER_MAX_IMAGE_BYTES: int(1, 1_000_000_000_000_000).default(1024 * 1024 * 1024),
  NATS_URL: yup
    .string()
    .optional()
    .test('nats-url', 'NATS_URL must be nats://host:port (several comma-separated)', (value) => {
      if (!value) return true;
      return value.split(',').every((server) => {
        try {
          const url = new URL(server.trim());
          return ['nats:', 'tls:'].includes(url.protocol) && url.hostname !== '';
        } catch {
          return false;
        }
      });
    }),
  // Names of JetStream buckets and subject tokens: no dots, no wildcards.
  CLUSTER_PREFIX: yup
    .string()
    .matches(/^[A-Za-z0-9_-]{1,40}$/, 'CLUSTER_PREFIX must be 1-40 letters, digits, _ or -')
    .default('marketplace'),
  CLUSTER_INSTANCE_ID: yup
    .string()
    .optional()
    .matches(/^[A-Za-z0-9_-]{1,64}$/, 'CLUSTER_INSTANCE_ID must be 1-64 letters, digits, _ or -'),
  CLUSTER_SHARDS: int(1, 4096).default(64),
  CLUSTER_LEASE_TTL_MS: int(500, 60_000).default(3000),
  CLUSTER_RENEW_MS: int(100, 30_000).default(1000),
  CLUSTER_REQUEST_TIMEOUT_MS: int(100, 120_000).default(5000),
  IDEMPOTENCY_LEASE_MS: int(200, 60_000).default(2_000),
  IDEMPOTENCY_WAIT_MS: int(0, 60_000).default(3_000),
  NOTIFICATION_SWEEP_MS: int(100, 86_400_000).default(5_000),
  // Operator order policies: each off (unset) unless configured, so API.md's contract stays the default.
  ORDER_MAX_PENDING_PER_BUYER: int(1, 1_000_000).optional(),
  ORDER_MAX_UNITS_PER_PRODUCT: int(1, 1_000_000_000).optional(),
  ORDER_PENDING_EXPIRY_SECONDS: int(60, 31_536_000).optional(),
  ORDER_EXPIRY_SWEEP_SECONDS: int(1, 86_400).default(60),
  ORDER_EXPIRY_BATCH: int(1, 10_000).default(100),
});

export type Role = 'BUYER' | 'SELLER' | 'ADMIN';

/** Cluster mode (lib/cluster), present only when NATS_URL is set. */
export interface ClusterConfig {
  natsUrl: string;
  /** Subject prefix and bucket-name prefix: instances with the same prefix form one cluster. */
  prefix: string;
  /** This process's name in the cluster (membership key, connection name, event origin). */
  instanceId: string;
  shards: number;
  leaseTtlMs: number;
  renewMs: number;
  requestTimeoutMs: number;
}
export type InventoryMode = 'actor' | 'transactional';

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  database:
    | {
        client: 'sqlite';
        filename: string;
        /** WAL checkpoints in a worker thread every this many ms; 0 or absent: SQLite's own, on the event loop. */
        checkpointIntervalMs?: number;
        /** This connection's `wal_autocheckpoint` (pages); absent: SQLite's default (1,000). */
        walAutocheckpointPages?: number;
      }
    | { client: 'mysql'; url: string; poolMax: number };
  dataDir: string;
  uploadDir: string;
  migrateOnStart: boolean;
  /** How long a start waits for another instance's migrations (knex's migration lock) before it fails. */
  migrateLockWaitMs: number;
  seedOnStart: boolean;
  seedPasswords: { admin: string; seller: string; buyer: string };
  jwt: { secret: string; algorithm: 'HS256' | 'HS384' | 'HS512'; issuer: string; audience: string };
  corsOrigins: string[];
  log: { level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'; format: 'line' | 'json' };
  bcryptCost: number;
  inventoryMode: InventoryMode;
  actorIdleMs: number;
  shutdownTimeoutMs: number;
  /** bcrypt hashes/compares running at once, and how many may wait before 503. */
  bcrypt: { concurrency: number; queueLimit: number };
  /** How long an authenticated request may rely on a cached member role and token version. */
  authMemberCacheSeconds: number;
  /** Anonymous product list pages held by the product service (0: none cached). */
  productListCacheEntries: number;
  /** How often used/expired refresh tokens and expired idempotency keys are deleted. */
  pruneIntervalSeconds: number;
  /**
   * How often the notification dispatcher looks for due outbox rows nobody told it about (another process's
   * leftovers after a crash); this process's own commits wake it at once.
   */
  notificationSweepMs: number;
  /**
   * Whether the pruner removes image files that no image row names (over an hour old). Off unless UPLOAD_DIR is
   * this database's alone: another database's files there have no row here either.
   */
  pruneOrphanImageFiles: boolean;
  /**
   * The first pruning pass and the first expiry sweep run at a random moment within this many seconds of start
   * (or of their interval, when that is shorter); null: only after one full interval.
   */
  maintenanceFirstPassSeconds: number | null;
  /** Koa's `proxy` and `maxIpsCount`: whether X-Forwarded-For names the client, through how many proxies. */
  trustProxy: { enabled: boolean; hops: number };
  /** Bearer token that opens GET /metrics to non-loopback clients in production; null: loopback only. */
  metricsToken: string | null;
  /** Shared (database) rate limits; null = off. Login limits count failures, the others every request. */
  limits: {
    login: {
      failures: RateLimit;
      email: RateLimit | null;
      address: RateLimit | null;
      global: RateLimit | null;
    };
    signup: { address: RateLimit | null; global: RateLimit | null };
    refresh: { address: RateLimit | null; global: RateLimit | null };
  };
  /** Decompression-bomb guard: width × height × frames of an uploaded image. */
  uploadMaxPixels: number;
  /** Per seller: live (not deleted) products, and bytes of stored images (deleted products' included). */
  quotas: { productsPerSeller: number; imageBytesPerSeller: number };
  cluster: ClusterConfig | null;
  /** An idempotency claim's lease (renewed by its owner every quarter of it) and a duplicate's wait. */
  idempotency: { leaseMs: number; waitMs: number };
  /** Operator order policies (null = off): README "Security" has the rules and recommended values. */
  orderPolicies: OrderPolicies;
  /** Bounds on waiting for the database; past them a request is answered 503 (lib/db-errors.ts). */
  dbTimeouts: DbTimeouts;
  http: HttpConfig;
}

export interface OrderPolicies {
  /** PENDING orders one buyer may have at once. */
  maxPendingPerBuyer: number | null;
  /** Units of one product one buyer may have in open (PENDING or CONFIRMED) orders. */
  maxUnitsPerProduct: number | null;
  /** A PENDING order this old is cancelled by the expiry sweep (every sweepSeconds, at most batch per sweep). */
  pendingExpiry: { seconds: number; sweepSeconds: number; batch: number } | null;
}

export interface DbTimeouts {
  connectMs: number;
  acquireMs: number;
  statementMs: number;
}

export interface HttpLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

export interface HttpConfig extends HttpLimits {
  /**
   * Requests started per event-loop turn at most (0: all at once); lib/http/turns.ts says why. Off by default with
   * SQLite, whose statements run on the event loop: there is no answer to read between turns, and turns only
   * shrink the group commit's batches (bench/README.md, Issue 13, requests in turns).
   */
  requestsPerTurn: number;
}

/** HTTP_REQUESTS_PER_TURN's default with MySQL/MariaDB. */
const REQUESTS_PER_TURN_MYSQL = 4;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Validates an environment (process.env by default) into a typed Config, or throws ConfigError. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let v: yup.InferType<typeof envSchema>;
  // An empty variable (`PORT=`) means "not set": it gets the default, never a surprising empty value.
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  try {
    v = envSchema.validateSync(given, { abortEarly: true, stripUnknown: true });
  } catch (err) {
    if (err instanceof yup.ValidationError) {
      const variable = err.path ?? 'environment';
      throw new ConfigError(variable, `Invalid configuration: ${err.errors[0] ?? `${variable} is invalid`}`);
    }
    throw err;
  }

  const production = v.NODE_ENV === 'production';
  if (production && !v.JWT_SECRET) {
    throw new ConfigError(
      'JWT_SECRET',
      'Invalid configuration: JWT_SECRET is required when NODE_ENV=production',
    );
  }
  const bcryptCost = v.BCRYPT_COST ?? 12;
  if (v.NODE_ENV !== 'test' && bcryptCost < 10) {
    throw new ConfigError(
      'BCRYPT_COST',
      'Invalid configuration: BCRYPT_COST must be at least 10 outside tests',
    );
  }

  if (v.HTTP_HEADERS_TIMEOUT_MS > v.HTTP_REQUEST_TIMEOUT_MS) {
    throw new ConfigError(
      'HTTP_HEADERS_TIMEOUT_MS',
      'Invalid configuration: HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS',
    );
  }

  // Cluster instances share one database; the embedded SQLite file is one process's (several processes on one
  // file would each run their own group commit against the same file lock, which nothing here tests).
  if (v.NATS_URL && !v.DATABASE_URL) {
    throw new ConfigError(
      'NATS_URL',
      'Invalid configuration: NATS_URL (cluster mode) needs DATABASE_URL: instances share one MySQL/MariaDB database, and the embedded SQLite file serves one process',
    );
  }

  // A lease is trusted for its TTL less one renewal period (lib/cluster/lease-table.ts); renewals must fit at
  // least twice into that, or a renewal a little late (timers always are) would lose every shard.
  if (v.CLUSTER_RENEW_MS * 3 > v.CLUSTER_LEASE_TTL_MS) {
    throw new ConfigError(
      'CLUSTER_RENEW_MS',
      'Invalid configuration: CLUSTER_RENEW_MS must be at most a third of CLUSTER_LEASE_TTL_MS',
    );
  }

  const dataDir = path.resolve(v.DATA_DIR);
  const jwtSecretIn = (dir: string) => {
    try {
      return localJwtSecret(dir);
    } catch (err) {
      throw new ConfigError(
        'JWT_SECRET',
        `Invalid configuration: JWT_SECRET unset and ${(err as Error).message}`,
      );
    }
  };
  const corsOrigins = v.CORS_ORIGINS.split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  // A wildcard only as the whole leftmost label, before at least two fixed ones (`https://*.example.com`) or
  // `localhost` (`http://*.localhost:5173`), and never before a public suffix (`*.co.uk`, `*.github.io`: the
  // Public Suffix List, through tldts). Anywhere else it would also allow someone else's site
  // (`https://*example.com` matches `https://evilexample.com`, `https://*.example.*` matches
  // `https://www.example.evil.test`, `https://*.co.uk` every British company), with credentials.
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d+)?$/.test(origin)) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `Invalid configuration: CORS_ORIGINS entry "${origin}" is not an origin` +
          (origin.includes('*')
            ? ' (a wildcard stands only for whole leading labels: https://*.example.com)'
            : ''),
      );
    }
    if (origin.includes('*') && !wildcardOwnsItsSuffix(origin)) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `Invalid configuration: CORS_ORIGINS entry "${origin}" matches too much: a wildcard needs a domain of its own after it, not a public suffix (https://*.example.com)`,
      );
    }
  }

  const database: Config['database'] = v.DATABASE_URL
    ? { client: 'mysql', url: v.DATABASE_URL, poolMax: v.DB_POOL_MAX }
    : {
        client: 'sqlite',
        filename: path.join(dataDir, 'marketplace.sqlite'),
        checkpointIntervalMs: v.SQLITE_CHECKPOINT_INTERVAL_MS,
      };
  return {
    env: v.NODE_ENV as Config['env'],
    port: v.PORT,
    // Production keeps listening on every interface; anywhere else a default start is reachable from this
    // machine only, so a laptop on a shared network does not expose the demo accounts.
    host: v.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    database,
    dataDir,
    uploadDir: path.resolve(v.UPLOAD_DIR ?? path.join(dataDir, 'uploads')),
    migrateOnStart: v.MIGRATE_ON_START,
    migrateLockWaitMs: v.MIGRATE_LOCK_WAIT_MS,
    seedOnStart: v.SEED_ON_START ?? !production,
    seedPasswords: {
      admin: v.SEED_ADMIN_PASSWORD ?? DEFAULT_SEED_PASSWORDS.admin,
      seller: v.SEED_SELLER_PASSWORD ?? DEFAULT_SEED_PASSWORDS.seller,
      buyer: v.SEED_BUYER_PASSWORD ?? DEFAULT_SEED_PASSWORDS.buyer,
    },
    jwt: {
      // Outside production, a random secret kept in DATA_DIR (never one from the repository).
      secret: v.JWT_SECRET ?? jwtSecretIn(dataDir),
      algorithm: v.JWT_ALGORITHM as Config['jwt']['algorithm'],
      issuer: v.JWT_ISSUER,
      audience: v.JWT_AUDIENCE,
    },
    corsOrigins,
    log: { level: v.LOG_LEVEL as Config['log']['level'], format: v.LOG_FORMAT as Config['log']['format'] },
    bcryptCost,
    inventoryMode: v.INVENTORY_MODE as InventoryMode,
    actorIdleMs: v.ACTOR_IDLE_MS,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    dbTimeouts: {
      connectMs: v.DB_CONNECT_TIMEOUT_MS,
      acquireMs: v.DB_ACQUIRE_TIMEOUT_MS,
      statementMs: v.DB_STATEMENT_TIMEOUT_MS,
    },
    http: {
      requestTimeoutMs: v.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: v.HTTP_HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: v.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: v.HTTP_MAX_CONNECTIONS,
      requestsPerTurn:
        v.HTTP_REQUESTS_PER_TURN ?? (database.client === 'mysql' ? REQUESTS_PER_TURN_MYSQL : 0),
    },
    bcrypt: {
      concurrency: v.BCRYPT_CONCURRENCY ?? defaultBcryptConcurrency(),
      queueLimit: v.BCRYPT_QUEUE_LIMIT,
    },
    authMemberCacheSeconds: v.AUTH_MEMBER_CACHE_SECONDS,
    productListCacheEntries: v.PRODUCT_LIST_CACHE_ENTRIES,
    pruneIntervalSeconds: v.PRUNE_INTERVAL_SECONDS,
    pruneOrphanImageFiles: v.PRUNE_ORPHAN_IMAGE_FILES,
    maintenanceFirstPassSeconds:
      v.MAINTENANCE_FIRST_PASS_SECONDS === 'off' ? null : Number(v.MAINTENANCE_FIRST_PASS_SECONDS),
    trustProxy: { enabled: v.TRUST_PROXY, hops: v.TRUST_PROXY_HOPS },
    metricsToken: v.METRICS_TOKEN ?? null,
    limits: {
      login: {
        failures: parseRate(v.LOGIN_FAILURE_LIMIT)!,
        email: parseRate(v.LOGIN_EMAIL_LIMIT),
        address: parseRate(v.LOGIN_ADDRESS_LIMIT),
        global: parseRate(v.LOGIN_GLOBAL_LIMIT),
      },
      signup: { address: parseRate(v.SIGNUP_ADDRESS_LIMIT), global: parseRate(v.SIGNUP_GLOBAL_LIMIT) },
      refresh: { address: parseRate(v.REFRESH_ADDRESS_LIMIT), global: parseRate(v.REFRESH_GLOBAL_LIMIT) },
    },
    uploadMaxPixels: v.UPLOAD_MAX_PIXELS,
    quotas: { productsPerSeller: v.SELLER_MAX_PRODUCTS, imageBytesPerSeller: v.SELLER_MAX_IMAGE_BYTES },
    cluster: v.NATS_URL
      ? {
          natsUrl: v.NATS_URL,
          prefix: v.CLUSTER_PREFIX,
          instanceId: v.CLUSTER_INSTANCE_ID ?? defaultInstanceId(),
          shards: v.CLUSTER_SHARDS,
          leaseTtlMs: v.CLUSTER_LEASE_TTL_MS,
          renewMs: v.CLUSTER_RENEW_MS,
          requestTimeoutMs: v.CLUSTER_REQUEST_TIMEOUT_MS,
        }
      : null,
    idempotency: { leaseMs: v.IDEMPOTENCY_LEASE_MS, waitMs: v.IDEMPOTENCY_WAIT_MS },
    notificationSweepMs: v.NOTIFICATION_SWEEP_MS,
    orderPolicies: {
      maxPendingPerBuyer: v.ORDER_MAX_PENDING_PER_BUYER ?? null,
      maxUnitsPerProduct: v.ORDER_MAX_UNITS_PER_PRODUCT ?? null,
      pendingExpiry:
        v.ORDER_PENDING_EXPIRY_SECONDS === undefined
          ? null
          : {
              seconds: v.ORDER_PENDING_EXPIRY_SECONDS,
              sweepSeconds: v.ORDER_EXPIRY_SWEEP_SECONDS,
              batch: v.ORDER_EXPIRY_BATCH,
            },
    },
  };
}

/**
 * Hashes at once by default: one core's worth less than the machine has, at most 2 (of libuv's 4 threads). On
 * 2 cores that is 1: a second cost-12 hash would take the core the event loop needs, and an image GET during
 * 50 parallel logins went from p99 ~150 ms to ~100 ms on this 2-core machine (auth-bcrypt-bound.test.ts).
 */
/**
 * `scheme://*.<rest>[:port]` whose `<rest>` is `localhost` or a name below a public suffix: at least two labels,
 * and not itself a suffix anyone can register under (private ones such as github.io included).
 */
function wildcardOwnsItsSuffix(origin: string): boolean {
  const match = /^https?:\/\/\*\.([A-Za-z0-9.-]+?)(:\d+)?$/i.exec(origin);
  if (!match) return false;
  const rest = match[1].toLowerCase();
  if (rest === 'localhost') return true;
  if (!rest.includes('.')) return false;
  return getPublicSuffix(rest, { allowPrivateDomains: true }) !== rest;
}

function defaultBcryptConcurrency(): number {
  return Math.min(2, Math.max(1, os.availableParallelism() - 1));
}

/** Host name, pid and a random tail: unique even when a restarted process reuses a pid. */
function defaultInstanceId(): string {
  const host =
    os
      .hostname()
      .replace(/[^A-Za-z0-9_-]/g, '-')
      .slice(0, 40) || 'host';
  return `${host}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
}
