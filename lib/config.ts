// The one configuration module: reads the environment once, validates it with yup, and fails fast
// with one line naming the offending variable.
import path from 'node:path';
import * as yup from 'yup';

export const DEV_JWT_SECRET = 'dev-only-secret-change-me-0123456789abcdef';
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

const envSchema = yup.object({
  NODE_ENV: yup.string().oneOf(['development', 'production', 'test']).default('development'),
  PORT: int(0, 65535).default(8080),
  HOST: yup.string().default('0.0.0.0'),
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
  DATA_DIR: yup.string().default('./var'),
  UPLOAD_DIR: yup.string().optional(),
  MIGRATE_ON_START: bool().default(true),
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
  IDEMPOTENCY_LEASE_MS: int(200, 60_000).default(2_000),
  IDEMPOTENCY_WAIT_MS: int(0, 60_000).default(3_000),
});

export type Role = 'BUYER' | 'SELLER' | 'ADMIN';
export type InventoryMode = 'actor' | 'transactional';

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  database: { client: 'sqlite'; filename: string } | { client: 'mysql'; url: string; poolMax: number };
  dataDir: string;
  uploadDir: string;
  migrateOnStart: boolean;
  seedOnStart: boolean;
  seedPasswords: { admin: string; seller: string; buyer: string };
  jwt: { secret: string; algorithm: 'HS256' | 'HS384' | 'HS512'; issuer: string; audience: string };
  corsOrigins: string[];
  log: { level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'; format: 'line' | 'json' };
  bcryptCost: number;
  inventoryMode: InventoryMode;
  actorIdleMs: number;
  shutdownTimeoutMs: number;
  /** An idempotency claim's lease (renewed by its owner every quarter of it) and a duplicate's wait. */
  idempotency: { leaseMs: number; waitMs: number };
}

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
  if (production && (!v.JWT_SECRET || v.JWT_SECRET === DEV_JWT_SECRET)) {
    throw new ConfigError(
      'JWT_SECRET',
      'Invalid configuration: JWT_SECRET is required when NODE_ENV=production (not the development default)',
    );
  }
  const bcryptCost = v.BCRYPT_COST ?? 12;
  if (v.NODE_ENV !== 'test' && bcryptCost < 10) {
    throw new ConfigError(
      'BCRYPT_COST',
      'Invalid configuration: BCRYPT_COST must be at least 10 outside tests',
    );
  }

  const dataDir = path.resolve(v.DATA_DIR);
  const corsOrigins = v.CORS_ORIGINS.split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/[A-Za-z0-9.*-]+(:\d+)?$/.test(origin)) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `Invalid configuration: CORS_ORIGINS entry "${origin}" is not an origin`,
      );
    }
  }

  return {
    env: v.NODE_ENV as Config['env'],
    port: v.PORT,
    host: v.HOST,
    database: v.DATABASE_URL
      ? { client: 'mysql', url: v.DATABASE_URL, poolMax: v.DB_POOL_MAX }
      : { client: 'sqlite', filename: path.join(dataDir, 'marketplace.sqlite') },
    dataDir,
    uploadDir: path.resolve(v.UPLOAD_DIR ?? path.join(dataDir, 'uploads')),
    migrateOnStart: v.MIGRATE_ON_START,
    seedOnStart: v.SEED_ON_START ?? !production,
    seedPasswords: {
      admin: v.SEED_ADMIN_PASSWORD ?? DEFAULT_SEED_PASSWORDS.admin,
      seller: v.SEED_SELLER_PASSWORD ?? DEFAULT_SEED_PASSWORDS.seller,
      buyer: v.SEED_BUYER_PASSWORD ?? DEFAULT_SEED_PASSWORDS.buyer,
    },
    jwt: {
      secret: v.JWT_SECRET ?? DEV_JWT_SECRET,
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
    idempotency: { leaseMs: v.IDEMPOTENCY_LEASE_MS, waitMs: v.IDEMPOTENCY_WAIT_MS },
  };
}
