import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { ConfigError, loadConfig } from '../../lib/config';

// Each test's own DATA_DIR: outside production, loading a config without JWT_SECRET creates a secret there.
const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'mkt-config-'));
const base = { NODE_ENV: 'development', DATA_DIR: tempDir() };

function configError(t: import('ava').ExecutionContext, env: Record<string, string>): ConfigError {
  const err = t.throws(() => loadConfig(env), { instanceOf: ConfigError });
  return err as ConfigError;
}

test('defaults: port 8080 on loopback, embedded SQLite under ./var, actor inventory, line logs, bcrypt cost 12', (t) => {
  const config = loadConfig({ NODE_ENV: 'development', JWT_SECRET: 'y'.repeat(40) });
  t.is(config.port, 8080);
  t.is(config.host, '127.0.0.1');
  t.is(config.database.client, 'sqlite');
  t.true(config.database.client === 'sqlite' && config.database.filename.endsWith('/var/marketplace.sqlite'));
  t.true(config.database.client === 'sqlite' && config.database.checkpointIntervalMs === 250);
  t.true(config.uploadDir.endsWith('/var/uploads'));
  t.is(config.inventoryMode, 'actor');
  t.deepEqual(config.log, { level: 'info', format: 'line' });
  t.is(config.bcryptCost, 12);
  t.is(config.jwt.secret, 'y'.repeat(40));
  t.is(config.jwt.algorithm, 'HS256');
  t.true(config.migrateOnStart);
  t.true(config.seedOnStart);
  t.deepEqual(config.corsOrigins, ['http://localhost:3000', 'http://localhost:5173']);
});

test('DATABASE_URL=mysql://... selects MySQL', (t) => {
  const config = loadConfig({ ...base, DATABASE_URL: 'mysql://u:p@db.local:3307/shop' });
  t.deepEqual(config.database, { client: 'mysql', url: 'mysql://u:p@db.local:3307/shop', poolMax: 20 });
});

test('HTTP_REQUESTS_PER_TURN: 4 with MySQL, off (0) with SQLite by default; any value when given', (t) => {
  const mysql = { ...base, DATABASE_URL: 'mysql://u:p@db.local:3307/shop' };
  t.is(loadConfig(mysql).http.requestsPerTurn, 4);
  t.is(loadConfig({ ...base }).http.requestsPerTurn, 0);
  t.is(loadConfig({ ...mysql, HTTP_REQUESTS_PER_TURN: '0' }).http.requestsPerTurn, 0);
  t.is(loadConfig({ ...base, HTTP_REQUESTS_PER_TURN: '6' }).http.requestsPerTurn, 6);
});

test('every bad value names its variable', (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'postgres://x@h/db' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://root@127.0.0.1:3306' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
    [{ BCRYPT_COST: 'twelve' }, 'BCRYPT_COST'],
    [{ BCRYPT_COST: '9' }, 'BCRYPT_COST'],
    [{ INVENTORY_MODE: 'magic' }, 'INVENTORY_MODE'],
    [{ MIGRATE_ON_START: 'maybe' }, 'MIGRATE_ON_START'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ CORS_ORIGINS: 'not an origin' }, 'CORS_ORIGINS'],
    [{ NODE_ENV: 'staging' }, 'NODE_ENV'],
    [{ PORT: ' ' }, 'PORT'],
    [{ PORT: '80.5' }, 'PORT'],
    [{ SEED_ADMIN_PASSWORD: 'short' }, 'SEED_ADMIN_PASSWORD'],
    [{ SEED_BUYER_PASSWORD: 'x'.repeat(73) }, 'SEED_BUYER_PASSWORD'],
    [{ BCRYPT_CONCURRENCY: '0' }, 'BCRYPT_CONCURRENCY'],
    [{ BCRYPT_QUEUE_LIMIT: '-1' }, 'BCRYPT_QUEUE_LIMIT'],
    [{ SQLITE_CHECKPOINT_INTERVAL_MS: '-1' }, 'SQLITE_CHECKPOINT_INTERVAL_MS'],
    [{ SQLITE_CHECKPOINT_INTERVAL_MS: '60001' }, 'SQLITE_CHECKPOINT_INTERVAL_MS'],
    [{ AUTH_MEMBER_CACHE_SECONDS: '61' }, 'AUTH_MEMBER_CACHE_SECONDS'],
    [{ PRUNE_INTERVAL_SECONDS: '0' }, 'PRUNE_INTERVAL_SECONDS'],
    [{ HTTP_REQUESTS_PER_TURN: '-1' }, 'HTTP_REQUESTS_PER_TURN'],
    [{ HTTP_REQUESTS_PER_TURN: 'many' }, 'HTTP_REQUESTS_PER_TURN'],
  ];
  for (const [env, variable] of cases) {
    const err = configError(t, { ...base, ...env });
    t.is(err.variable, variable, JSON.stringify(env));
    t.true(err.message.includes(variable), err.message);
  }
});

test('CORS_ORIGINS: a wildcard only as whole leading labels before a domain of its own; anywhere else it is refused', (t) => {
  const origins =
    'https://*.example.com,https://*.shop.example.co.uk:8443,https://*.example.co.uk,http://localhost:5173,http://*.localhost:5173';
  t.deepEqual(loadConfig({ ...base, CORS_ORIGINS: origins }).corsOrigins, origins.split(','));
  for (const origin of [
    'https://*example.com', // would match https://evilexample.com
    'https://*.example.*', // would match https://www.example.evil.test
    'https://app-*.example.com',
    'https://*.com',
    'https://*.co.uk', // a public suffix: every British company's site
    'https://*.github.io', // a private public suffix: every GitHub Pages site
    'https://*.COM.AU:8443',
    'https://*',
    'https://a.*.example.com',
  ]) {
    const err = configError(t, { ...base, CORS_ORIGINS: origin });
    t.is(err.variable, 'CORS_ORIGINS', origin);
    t.true(err.message.includes(origin), err.message);
  }
});

test('production refuses to start without JWT_SECRET', (t) => {
  const err = configError(t, { NODE_ENV: 'production' });
  t.is(err.variable, 'JWT_SECRET');
  t.regex(err.message, /JWT_SECRET is required/);
  const dataDir = tempDir();
  t.is(configError(t, { NODE_ENV: 'production', DATA_DIR: dataDir }).variable, 'JWT_SECRET');
  t.deepEqual(fs.readdirSync(dataDir), [], 'production never generates a secret of its own');
  const ok = loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) });
  t.false(ok.seedOnStart, 'production does not seed by default');
  t.is(ok.host, '0.0.0.0', 'production keeps listening on every interface');
});

test('HOST: loopback by default outside production, any value when given', (t) => {
  t.is(loadConfig({ ...base }).host, '127.0.0.1');
  t.is(loadConfig({ ...base, NODE_ENV: 'test' }).host, '127.0.0.1');
  t.is(loadConfig({ ...base, HOST: '0.0.0.0' }).host, '0.0.0.0');
  t.is(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), HOST: '10.0.0.5' }).host, '10.0.0.5');
});

test('without JWT_SECRET: a random secret generated once in DATA_DIR (mode 0600) and reused', (t) => {
  const dataDir = tempDir();
  const first = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir }).jwt.secret;
  const file = path.join(dataDir, 'jwt-secret');
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  t.regex(first, /^[A-Za-z0-9_-]{64}$/);
  t.is(fs.readFileSync(file, 'utf8').trim(), first);
  t.is(loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir }).jwt.secret, first, 'reused on restart');
  t.not(
    loadConfig({ NODE_ENV: 'development', DATA_DIR: tempDir() }).jwt.secret,
    first,
    'random per DATA_DIR',
  );
  t.is(
    loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir, JWT_SECRET: 'z'.repeat(32) }).jwt.secret,
    'z'.repeat(32),
    'JWT_SECRET wins',
  );
});

test('a secret file other users can read, or a truncated one, stops the start naming JWT_SECRET', (t) => {
  const dataDir = tempDir();
  const file = path.join(dataDir, 'jwt-secret');
  fs.writeFileSync(file, 'a'.repeat(64), { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  const err = configError(t, { NODE_ENV: 'development', DATA_DIR: dataDir });
  t.is(err.variable, 'JWT_SECRET');
  t.regex(err.message, /readable by other users \(mode 644\)/);
  fs.writeFileSync(file, 'short', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  t.regex(configError(t, { NODE_ENV: 'development', DATA_DIR: dataDir }).message, /fewer than 32 characters/);
});

test('processes starting at once on one DATA_DIR agree on one secret', async (t) => {
  const dataDir = tempDir();
  const run = () =>
    promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        'import("./lib/config.ts").then((m) => process.stdout.write(m.loadConfig().jwt.secret))',
      ],
      { env: { PATH: process.env.PATH, NODE_ENV: 'development', DATA_DIR: dataDir }, timeout: 30_000 },
    );
  const outputs = await Promise.all(Array.from({ length: 4 }, run));
  const secrets = new Set(outputs.map((o) => o.stdout));
  t.is(secrets.size, 1);
  t.is([...secrets][0], fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8').trim());
  t.deepEqual(fs.readdirSync(dataDir), ['jwt-secret'], 'no temporary file left behind');
});

test('an empty variable means unset: the default applies', (t) => {
  const config = loadConfig({
    ...base,
    PORT: '',
    DATA_DIR: '',
    DATABASE_URL: '',
    JWT_SECRET: 'y'.repeat(40),
  });
  t.is(config.port, 8080);
  t.true(config.database.client === 'sqlite' && config.database.filename.endsWith('/var/marketplace.sqlite'));
});

test('bcrypt cost below 10 is only allowed in tests', (t) => {
  t.is(loadConfig({ ...base, NODE_ENV: 'test', BCRYPT_COST: '4' }).bcryptCost, 4);
});

test('a bad value stops the server process with one line naming the variable', async (t) => {
  const err = await t.throwsAsync(
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'lib/server.ts'], {
      env: { PATH: process.env.PATH, PORT: 'abc' },
      timeout: 30_000,
    }),
  );
  const failure = err as Error & { code?: number; stderr?: string };
  t.is(failure.code, 1);
  const lines = String(failure.stderr).trim().split('\n');
  t.is(lines.length, 1, failure.stderr);
  t.regex(lines[0], /^Invalid configuration: PORT must be an integer$/);
});

test('abuse limits: defaults, `<points>/<seconds>` values, `off`, and bad values named', (t) => {
  const config = loadConfig(base);
  t.deepEqual(config.trustProxy, { enabled: false, hops: 1 });
  t.deepEqual(config.limits, {
    login: {
      failures: { points: 5, seconds: 900 },
      email: { points: 20, seconds: 900 },
      address: { points: 100, seconds: 900 },
      global: { points: 5000, seconds: 900 },
    },
    signup: { address: { points: 30, seconds: 3600 }, global: { points: 1000, seconds: 3600 } },
    refresh: { address: { points: 300, seconds: 60 }, global: { points: 10000, seconds: 60 } },
  });
  const set = loadConfig({
    ...base,
    TRUST_PROXY: 'true',
    TRUST_PROXY_HOPS: '2',
    LOGIN_EMAIL_LIMIT: '50/3600',
    SIGNUP_GLOBAL_LIMIT: 'off',
  });
  t.deepEqual(set.trustProxy, { enabled: true, hops: 2 });
  t.deepEqual(set.limits.login.email, { points: 50, seconds: 3600 });
  t.is(set.limits.signup.global, null);
  t.is(config.uploadMaxPixels, 40_000_000);
  t.deepEqual(config.quotas, { productsPerSeller: 10_000, imageBytesPerSeller: 1024 * 1024 * 1024 });
  const cases: Array<[Record<string, string>, string]> = [
    [{ TRUST_PROXY: 'sometimes' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY_HOPS: '0' }, 'TRUST_PROXY_HOPS'],
    [{ LOGIN_FAILURE_LIMIT: 'off' }, 'LOGIN_FAILURE_LIMIT'],
    [{ LOGIN_EMAIL_LIMIT: '20' }, 'LOGIN_EMAIL_LIMIT'],
    [{ LOGIN_ADDRESS_LIMIT: '0/900' }, 'LOGIN_ADDRESS_LIMIT'],
    [{ REFRESH_GLOBAL_LIMIT: '10/0' }, 'REFRESH_GLOBAL_LIMIT'],
    [{ SIGNUP_ADDRESS_LIMIT: '1.5/60' }, 'SIGNUP_ADDRESS_LIMIT'],
    [{ UPLOAD_MAX_PIXELS: '0' }, 'UPLOAD_MAX_PIXELS'],
    [{ SELLER_MAX_PRODUCTS: 'many' }, 'SELLER_MAX_PRODUCTS'],
    [{ SELLER_MAX_IMAGE_BYTES: '1GB' }, 'SELLER_MAX_IMAGE_BYTES'],
  ];
  for (const [env, variable] of cases) {
    const err = configError(t, { ...base, ...env });
    t.is(err.variable, variable, JSON.stringify(env));
    t.true(err.message.includes(variable), err.message);
  }
});

test('METRICS_TOKEN: unset by default, at least 16 characters when given', (t) => {
  t.is(loadConfig(base).metricsToken, null);
  t.is(loadConfig({ ...base, METRICS_TOKEN: 'a-scrape-token-0123' }).metricsToken, 'a-scrape-token-0123');
  const err = configError(t, { ...base, METRICS_TOKEN: 'short' });
  t.is(err.variable, 'METRICS_TOKEN');
  t.is(err.message, 'Invalid configuration: METRICS_TOKEN must be at least 16 characters');
});

test('order policies: off unless set; values read back; bad values named', (t) => {
  t.deepEqual(loadConfig(base).orderPolicies, {
    maxPendingPerBuyer: null,
    maxUnitsPerProduct: null,
    pendingExpiry: null,
  });
  t.deepEqual(
    loadConfig({
      ...base,
      ORDER_MAX_PENDING_PER_BUYER: '10',
      ORDER_MAX_UNITS_PER_PRODUCT: '20',
      ORDER_PENDING_EXPIRY_SECONDS: '86400',
      ORDER_EXPIRY_SWEEP_SECONDS: '30',
      ORDER_EXPIRY_BATCH: '50',
    }).orderPolicies,
    {
      maxPendingPerBuyer: 10,
      maxUnitsPerProduct: 20,
      pendingExpiry: { seconds: 86400, sweepSeconds: 30, batch: 50 },
    },
  );
  for (const [variable, value, message] of [
    ['ORDER_MAX_PENDING_PER_BUYER', '0', 'ORDER_MAX_PENDING_PER_BUYER must be at least 1'],
    ['ORDER_MAX_UNITS_PER_PRODUCT', 'many', 'ORDER_MAX_UNITS_PER_PRODUCT must be an integer'],
    ['ORDER_PENDING_EXPIRY_SECONDS', '59', 'ORDER_PENDING_EXPIRY_SECONDS must be at least 60'],
    ['ORDER_EXPIRY_SWEEP_SECONDS', '0', 'ORDER_EXPIRY_SWEEP_SECONDS must be at least 1'],
    ['ORDER_EXPIRY_BATCH', '10001', 'ORDER_EXPIRY_BATCH must be at most 10000'],
  ]) {
    const err = configError(t, { ...base, [variable]: value });
    t.is(err.variable, variable);
    t.is(err.message, `Invalid configuration: ${message}`);
  }
});

test('MAINTENANCE_FIRST_PASS_SECONDS: 60 by default, seconds or off when given; bad values named', (t) => {
  const env = { ...base, JWT_SECRET: 'y'.repeat(40) };
  t.is(loadConfig(env).maintenanceFirstPassSeconds, 60);
  t.is(loadConfig({ ...env, MAINTENANCE_FIRST_PASS_SECONDS: '0' }).maintenanceFirstPassSeconds, 0);
  t.is(loadConfig({ ...env, MAINTENANCE_FIRST_PASS_SECONDS: '300' }).maintenanceFirstPassSeconds, 300);
  t.is(loadConfig({ ...env, MAINTENANCE_FIRST_PASS_SECONDS: 'off' }).maintenanceFirstPassSeconds, null);
  for (const bad of ['soon', '-1', '1.5', '86401']) {
    const err = configError(t, { ...env, MAINTENANCE_FIRST_PASS_SECONDS: bad });
    t.is(err.variable, 'MAINTENANCE_FIRST_PASS_SECONDS');
  }
});
