// Cluster settings in lib/config.ts: off without NATS_URL, validated and defaulted with it. Pure, so it runs
// on both passes.
import test from 'ava';
import { ConfigError, loadConfig } from '../../lib/config';

const base = { NODE_ENV: 'test' };
// Cluster mode needs a shared database; the URL is only parsed here, never connected to.
const mysql = { ...base, DATABASE_URL: 'mysql://root@127.0.0.1:3306/shop' };

test('without NATS_URL there is no cluster: nothing else is needed', (t) => {
  t.is(loadConfig(base).cluster, null);
});

test('NATS_URL turns cluster mode on with the documented defaults and a unique instance id', (t) => {
  const first = loadConfig({ ...mysql, NATS_URL: 'nats://127.0.0.1:4222' }).cluster!;
  const second = loadConfig({ ...mysql, NATS_URL: 'nats://127.0.0.1:4222' }).cluster!;
  t.like(first, {
    natsUrl: 'nats://127.0.0.1:4222',
    prefix: 'marketplace',
    shards: 64,
    leaseTtlMs: 3000,
    renewMs: 1000,
    requestTimeoutMs: 5000,
  });
  t.regex(first.instanceId, new RegExp(`^[A-Za-z0-9_-]+-${process.pid}-[0-9a-f]{6}$`));
  t.not(first.instanceId, second.instanceId);
  const custom = loadConfig({
    ...mysql,
    NATS_URL: 'nats://a:4222, nats://b:4222',
    CLUSTER_PREFIX: 'shop_eu',
    CLUSTER_INSTANCE_ID: 'web-1',
    CLUSTER_SHARDS: '128',
    CLUSTER_LEASE_TTL_MS: '6000',
    CLUSTER_RENEW_MS: '2000',
    CLUSTER_REQUEST_TIMEOUT_MS: '800',
  }).cluster;
  t.deepEqual(custom, {
    natsUrl: 'nats://a:4222, nats://b:4222',
    prefix: 'shop_eu',
    instanceId: 'web-1',
    shards: 128,
    leaseTtlMs: 6000,
    renewMs: 2000,
    requestTimeoutMs: 800,
  });
});

test('every bad cluster value names its variable', (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ NATS_URL: 'http://127.0.0.1:4222' }, 'NATS_URL'],
    [{ NATS_URL: 'nats://ok:4222,not a url' }, 'NATS_URL'],
    [{ CLUSTER_PREFIX: 'has.dot' }, 'CLUSTER_PREFIX'],
    [{ CLUSTER_INSTANCE_ID: 'a*b' }, 'CLUSTER_INSTANCE_ID'],
    [{ CLUSTER_SHARDS: '0' }, 'CLUSTER_SHARDS'],
    [{ CLUSTER_LEASE_TTL_MS: '100' }, 'CLUSTER_LEASE_TTL_MS'],
    [{ CLUSTER_RENEW_MS: '2000' }, 'CLUSTER_RENEW_MS'], // more than a third of the 3000 ms TTL
    // half the TTL: a lease trusted for one renewal period flaps with every late timer
    [{ CLUSTER_LEASE_TTL_MS: '2000', CLUSTER_RENEW_MS: '1000' }, 'CLUSTER_RENEW_MS'],
    [{ CLUSTER_REQUEST_TIMEOUT_MS: 'soon' }, 'CLUSTER_REQUEST_TIMEOUT_MS'],
  ];
  for (const [env, variable] of cases) {
    const err = t.throws(() => loadConfig({ ...mysql, NATS_URL: 'nats://127.0.0.1:4222', ...env }), {
      instanceOf: ConfigError,
    });
    t.is(err?.variable, variable, JSON.stringify(env));
  }
});

test('NATS_URL without DATABASE_URL is refused: a cluster shares MySQL/MariaDB, never the embedded SQLite file', (t) => {
  const err = t.throws(() => loadConfig({ ...base, NATS_URL: 'nats://127.0.0.1:4222' }), {
    instanceOf: ConfigError,
  });
  t.is(err?.variable, 'NATS_URL');
  t.is(
    err?.message,
    'Invalid configuration: NATS_URL (cluster mode) needs DATABASE_URL: instances share one MySQL/MariaDB database, and the embedded SQLite file serves one process',
  );
});
