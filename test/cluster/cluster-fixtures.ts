// Cluster tests run against the real NATS (JetStream) at 127.0.0.1:4222, or TEST_NATS_URL. They need no
// database, so they run once, in the MySQL pass; on the SQLite pass they are registered as skipped with a
// title saying so. Each test file gets its own subject prefix and bucket names, so files never meet.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import readline from 'node:readline';
import test, { type ExecutionContext, type Implementation } from 'ava';
import { loadConfig, type ClusterConfig } from '../../lib/config';
import { createLogger, type Logger } from '../../lib/logger';
import { createCluster, destroyClusterBuckets, type Cluster } from '../../lib/cluster/cluster';
import { createMember, createProduct } from '../helpers/factories';
import { createTestDatabase, DB_KIND, LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { until } from '../helpers/until';

export const NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

type Body = Implementation<[]>;

/**
 * Registers a cluster test: serial (the timings they assert must not compete with each other) on the MySQL
 * pass, a skip whose title says so on the SQLite pass. The first one in a file also fails the file loudly
 * when NATS does not answer, never passing silently.
 */
export function natsTest(title: string, body: Body): void {
  if (DB_KIND !== 'mysql') {
    test.skip(`${title} [NATS test: runs on the mysql pass only]`, body);
    return;
  }
  if (!checked) {
    checked = true;
    test.before(natsAnswers);
  }
  test.serial(title, body);
}
let checked = false;

async function natsAnswers(): Promise<void> {
  const url = new URL(NATS_URL);
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 4222) });
    socket.setTimeout(2000);
    socket.once('data', (chunk) => {
      socket.destroy();
      if (chunk.toString().startsWith('INFO')) resolve();
      else reject(new Error(`${NATS_URL} is not a NATS server`));
    });
    const fail = (why: string) => {
      socket.destroy();
      reject(
        new Error(
          `NATS does not answer at ${NATS_URL} (${why}). Start it: start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log`,
        ),
      );
    };
    socket.once('timeout', () => fail('timeout'));
    socket.once('error', (err) => fail(err.message));
  });
}

export const uniquePrefix = (label: string) => `t-${label}-${crypto.randomBytes(4).toString('hex')}`;

export function clusterConfig(prefix: string, env: Record<string, string> = {}): ClusterConfig {
  // Cluster mode needs a shared database's URL; these tests use the cluster alone, so it is never connected to.
  const config = loadConfig({
    NODE_ENV: 'test',
    NATS_URL,
    DATABASE_URL: 'mysql://root@127.0.0.1:3306/unused',
    CLUSTER_PREFIX: prefix,
    ...env,
  });
  return config.cluster!;
}

export const quietLogger = (): Logger =>
  createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });

export async function startNode(
  prefix: string,
  instanceId: string,
  env: Record<string, string> = {},
  logger: Logger = quietLogger(),
): Promise<Cluster> {
  return createCluster({
    config: clusterConfig(prefix, { CLUSTER_INSTANCE_ID: instanceId, ...env }),
    logger,
  });
}

export async function cleanup(prefix: string, nodes: Array<Cluster | undefined>): Promise<void> {
  await Promise.allSettled(nodes.map((node) => node?.close()));
  await destroyClusterBuckets(NATS_URL, prefix);
}

export { until };

/** Waits until `node` owns exactly `count` shards; a timeout names how many it owns (and `when`). */
export const untilOwns = (node: Cluster, count: number, ms: number, when = '') =>
  until(
    () => node.ownedShards().length === count,
    ms,
    () => `${node.ownedShards().length} shards owned, not ${count}${when ? ` ${when}` : ''}`,
  );

/** Every shard owned by exactly one of `nodes`, none above `max`. */
export function exactlyOnce(nodes: Cluster[], shards: number, max: number): boolean {
  const owners = new Map<number, number>();
  for (const node of nodes)
    for (const shard of node.ownedShards()) owners.set(shard, (owners.get(shard) ?? 0) + 1);
  return (
    owners.size === shards &&
    [...owners.values()].every((count) => count === 1) &&
    nodes.every((node) => node.ownedShards().length <= max)
  );
}

export const shareReport = (nodes: Cluster[]) =>
  nodes.map((node) => `${node.instanceId}: ${node.ownedShards().length}`).join(', ');

/** A product id in `shard`. */
export const productIn = (shard: number, shards = 64, n = 1) => shard + shards * n;

/** A cluster node in a child process of its own (test/cluster/cluster-node.ts), for SIGKILL and SIGSTOP. */
export interface ChildNode {
  process: ChildProcess;
  /** The shards it last reported owning (it reports on every loss and every 100 ms). */
  owned: number[];
  /** How many reports arrived. */
  reports: number;
  exited: Promise<void>;
  stderr: string;
}

export function spawnNode(prefix: string, instanceId: string, env: Record<string, string> = {}): ChildNode {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/cluster/cluster-node.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      NATS_URL,
      DATABASE_URL: 'mysql://root@127.0.0.1:3306/unused', // cluster mode needs one; this node never connects
      CLUSTER_PREFIX: prefix,
      CLUSTER_INSTANCE_ID: instanceId,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const node: ChildNode = {
    process: child,
    owned: [],
    reports: 0,
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', () => resolve())),
  };
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    node.owned = (JSON.parse(line) as { owned: number[] }).owned;
    node.reports++;
  });
  child.stderr!.on('data', (chunk: Buffer) => (node.stderr += chunk.toString()));
  return node;
}

/**
 * A bare forwarder's settings over 64 shards with the test timings (1 s request timeout, 600 ms handover wait,
 * Retry-After 4 s, always connected); a forwarder adds its own `nc`, `instanceId` and `owns`.
 */
export const forwarderSettings = (
  prefix: string,
  overrides: { requestTimeoutMs?: number; handoverWaitMs?: number } = {},
) => ({
  prefix,
  requestTimeoutMs: overrides.requestTimeoutMs ?? 1000,
  handoverWaitMs: overrides.handoverWaitMs ?? 600,
  retryAfterSeconds: 4,
  shardOf: (id: number) => id % 64,
  logger: quietLogger(),
  connected: () => true,
});

/** Two service instances of one cluster on one fresh database; A's NATS link runs through `proxy`, B's directly. */
export interface ProxiedPair {
  a: TestApp;
  b: TestApp;
  /** A's link to NATS: `cutA()` cuts it, `pass()` lets it through again. */
  proxy: TcpProxy;
  /** Cuts A's link to NATS and refuses new ones (a blip, a middlebox reset); resolves once A noticed. B stays. */
  cutA(): Promise<void>;
  /** Closes both instances and the proxy, removes the cluster's buckets and drops the database. */
  close(): Promise<void>;
}

/** Starts a `ProxiedPair` (8 shards; `env` adds or overrides settings of both instances). */
export async function startProxiedPair(
  label: string,
  env: Record<string, string> = {},
): Promise<ProxiedPair> {
  const database = await createTestDatabase();
  const prefix = uniquePrefix(label);
  const nats = new URL(NATS_URL);
  const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
  const apps: TestApp[] = [];
  const close = async () => {
    await Promise.allSettled(apps.map((app) => app.close()));
    await proxy.close();
    await destroyClusterBuckets(NATS_URL, prefix);
    await database.drop();
  };
  const envOf = (id: string, url: string) => ({
    NATS_URL: url,
    CLUSTER_PREFIX: prefix,
    CLUSTER_INSTANCE_ID: id,
    CLUSTER_SHARDS: '8',
    ...env,
  });
  try {
    apps.push(
      await startTestApp({ database, env: envOf('a', `nats://127.0.0.1:${proxy.port}`), logLevel: 'warn' }),
    );
    apps.push(await startTestApp({ database, env: envOf('b', NATS_URL) }));
  } catch (err) {
    await close();
    throw err;
  }
  const [a, b] = apps;
  const cutA = async () => {
    proxy.refuse();
    proxy.cutAll();
    await until(
      () => /Disconnected from NATS/.test(a.logs.text),
      2000,
      () => 'A did not notice the cut',
    );
  };
  return { a, b, proxy, cutA, close };
}

/**
 * A one-sided cut (A's link only) with an edit on `editor` meanwhile, read on the other instance: the reader serves
 * its cached copy while A is cut off, and the edit (with the editor's ETag) within 1 s of A's link being let through
 * again, far before the cache's TTL. When A edits, its announcement was dropped; when B edits, A missed it.
 */
export async function editDuringOneSidedCut(
  t: ExecutionContext,
  pair: ProxiedPair,
  editor: 'a' | 'b',
): Promise<void> {
  const [writer, reader] = editor === 'a' ? [pair.a, pair.b] : [pair.b, pair.a];
  const seller = await createMember(writer, 'SELLER');
  const productId = await createProduct(writer, seller.id, { stockQuantity: 5, price: '10.00' });
  const detail = `/api/v1/products/${productId}`;
  const cached = await reader.request('GET', detail);
  t.is(cached.status, 200);
  t.is(cached.body.price, 10);

  await pair.cutA();
  const edit = await writer.request('PATCH', detail, { token: seller.token, body: { price: 12.5 } });
  t.is(edit.status, 200, edit.text);
  t.is(edit.body.price, 12.5);
  t.is((await reader.request('GET', detail)).body.price, 10, 'the announcement did not cross the cut');

  pair.proxy.pass();
  const back = Date.now();
  await until(
    async () => (await reader.request('GET', detail)).body.price === 12.5,
    // A reconnects within its reconnect wait (250 ms) once NATS takes connections again.
    1000 + 250,
    () => `the reader still serves the price from before the edit made on ${editor}`,
  );
  t.log(`the reader served the edit ${Date.now() - back} ms after A's link was let through again`);
  const fresh = await reader.request('GET', detail);
  t.is(fresh.headers.get('etag'), (await writer.request('GET', detail)).headers.get('etag'));
}
