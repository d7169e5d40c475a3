// Edges of the runtime configuration (lib/config.ts) that a mutation hunt found unpinned: the documented defaults
// (README's configuration table), inclusive bounds with messages naming them, booleans, BCRYPT_COST's floor outside
// tests, JWT_SECRET's length, the mariadb:// scheme and UPLOAD_DIR.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ConfigError, loadConfig } from '../../lib/config';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'mkt-config-edges-'));
const base = { NODE_ENV: 'development', DATA_DIR: tempDir(), JWT_SECRET: 'y'.repeat(40) };

function refused(t: import('ava').ExecutionContext, env: Record<string, string>): ConfigError {
  return t.throws(() => loadConfig({ ...base, ...env }), { instanceOf: ConfigError }) as ConfigError;
}

test('config: the documented defaults of the runtime settings (README configuration table)', (t) => {
  const config = loadConfig(base);
  t.is(config.shutdownTimeoutMs, 10_000);
  t.is(config.migrateLockWaitMs, 60_000);
  t.is(config.actorIdleMs, 60_000);
  t.is(config.pruneIntervalSeconds, 600);
  t.false(config.pruneOrphanImageFiles);
  t.is(config.notificationSweepMs, 5_000);
  t.deepEqual(config.idempotency, { leaseMs: 2_000, waitMs: 3_000 });
  t.is(config.authMemberCacheSeconds, 30);
  t.is(config.productListCacheEntries, 1_000);
  t.is(config.bcrypt.queueLimit, 32);
  t.deepEqual(config.dbTimeouts, { connectMs: 5_000, acquireMs: 5_000, statementMs: 5_000 });
  // The sweep's own defaults once the expiry is turned on.
  t.deepEqual(loadConfig({ ...base, ORDER_PENDING_EXPIRY_SECONDS: '600' }).orderPolicies.pendingExpiry, {
    seconds: 600,
    sweepSeconds: 60,
    batch: 100,
  });
});

test('config: bounds are inclusive; one past either end is refused with a message naming the bound', (t) => {
  const cases: Array<[string, string, string, string, string]> = [
    // variable, lowest accepted, highest accepted, below, above
    ['DB_POOL_MAX', '1', '200', '0', '201'],
    ['SHUTDOWN_TIMEOUT_MS', '100', '600000', '99', '600001'],
    ['PRUNE_INTERVAL_SECONDS', '1', '86400', '0', '86401'],
    ['DB_STATEMENT_TIMEOUT_MS', '100', '3600000', '99', '3600001'],
    ['MIGRATE_LOCK_WAIT_MS', '0', '3600000', '-1', '3600001'],
  ];
  for (const [variable, low, high, below, above] of cases) {
    t.notThrows(() => loadConfig({ ...base, [variable]: low }), `${variable}=${low}`);
    t.notThrows(() => loadConfig({ ...base, [variable]: high }), `${variable}=${high}`);
    const under = refused(t, { [variable]: below });
    t.is(under.variable, variable);
    t.is(under.message, `Invalid configuration: ${variable} must be at least ${low}`);
    const over = refused(t, { [variable]: above });
    t.is(over.variable, variable);
    t.is(over.message, `Invalid configuration: ${variable} must be at most ${high}`);
  }
  t.is(loadConfig({ ...base, DB_POOL_MAX: '1', DATABASE_URL: 'mysql://u:p@h/db' }).database.client, 'mysql');
  t.is(loadConfig({ ...base, SHUTDOWN_TIMEOUT_MS: '100' }).shutdownTimeoutMs, 100);
  t.is(loadConfig({ ...base, MAINTENANCE_FIRST_PASS_SECONDS: '86400' }).maintenanceFirstPassSeconds, 86_400);
});

test('config: HTTP_HEADERS_TIMEOUT_MS may equal HTTP_REQUEST_TIMEOUT_MS; only a longer one is refused', (t) => {
  const equal = loadConfig({ ...base, HTTP_HEADERS_TIMEOUT_MS: '30000', HTTP_REQUEST_TIMEOUT_MS: '30000' });
  t.is(equal.http.headersTimeoutMs, 30_000);
  t.is(equal.http.requestTimeoutMs, 30_000);
  const err = refused(t, { HTTP_HEADERS_TIMEOUT_MS: '30001', HTTP_REQUEST_TIMEOUT_MS: '30000' });
  t.is(err.message, 'Invalid configuration: HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS');
});

test('config: booleans accept true/false, 1/0 and yes/no in any case; anything else is named', (t) => {
  for (const [text, value] of [
    ['yes', true],
    ['YES', true],
    ['1', true],
    ['no', false],
    ['No', false],
    ['0', false],
  ] as const) {
    t.is(loadConfig({ ...base, MIGRATE_ON_START: text }).migrateOnStart, value, text);
    t.is(loadConfig({ ...base, PRUNE_ORPHAN_IMAGE_FILES: text }).pruneOrphanImageFiles, value, text);
  }
  t.is(
    refused(t, { PRUNE_ORPHAN_IMAGE_FILES: 'on' }).message,
    'Invalid configuration: PRUNE_ORPHAN_IMAGE_FILES must be true or false',
  );
});

test('config: BCRYPT_COST 10 is the least outside tests, in production as in development', (t) => {
  t.is(loadConfig({ ...base, BCRYPT_COST: '10' }).bcryptCost, 10);
  const prod = { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) };
  t.is(loadConfig({ ...prod, BCRYPT_COST: '10' }).bcryptCost, 10);
  const err = t.throws(() => loadConfig({ ...prod, BCRYPT_COST: '9' }), { instanceOf: ConfigError });
  t.is(err?.message, 'Invalid configuration: BCRYPT_COST must be at least 10 outside tests');
});

test('config: JWT_SECRET of exactly 32 characters is accepted, 31 refused', (t) => {
  t.is(loadConfig({ ...base, JWT_SECRET: 's'.repeat(32) }).jwt.secret, 's'.repeat(32));
  const err = refused(t, { JWT_SECRET: 's'.repeat(31) });
  t.is(err.variable, 'JWT_SECRET');
  t.is(err.message, 'Invalid configuration: JWT_SECRET must be at least 32 characters');
});

test('config: DATABASE_URL may say mariadb://; UPLOAD_DIR, when given, is where uploads go', (t) => {
  t.deepEqual(loadConfig({ ...base, DATABASE_URL: 'mariadb://u:p@db:3306/shop' }).database, {
    client: 'mysql',
    url: 'mariadb://u:p@db:3306/shop',
    poolMax: 20,
  });
  const uploads = path.join(tempDir(), 'elsewhere');
  t.is(loadConfig({ ...base, UPLOAD_DIR: uploads }).uploadDir, uploads);
});

test('config: a negative integer is refused for its bound, not as "not an integer"', (t) => {
  t.is(
    refused(t, { HTTP_MAX_CONNECTIONS: '-5' }).message,
    'Invalid configuration: HTTP_MAX_CONNECTIONS must be at least 1',
  );
});
