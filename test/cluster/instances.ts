// Several real server processes (`node --import tsx lib/server.ts`, as `npm start` runs it) on one private
// MariaDB database and one private cluster prefix, as a deployment behind a load balancer runs them. The
// test process migrates the database once, makes its data straight in it (members, categories, products,
// with the factories of test/helpers), signs tokens with the instances' own secret, and talks to the
// instances over HTTP; every response is held against the served OpenAPI document. Cleanup kills every
// child (also when the test process dies), deletes the cluster's buckets and drops the database.
import crypto from 'node:crypto';
import http from 'node:http';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import knexFactory, { type Knex } from 'knex';
import { createApp } from '../../lib/app';
import { createTokenService } from '../../lib/auth/tokens';
import { bucketNames, destroyClusterBuckets } from '../../lib/cluster/cluster';
import { liveKeys } from '../../lib/cluster/lease-table';
import { shardFromKey } from '../../lib/cluster/shards';
import type { Role } from '../../lib/config';
import { knexConfig } from '../../lib/db';
import { prepareDatabase } from '../../lib/server';
import { buildServedDocument } from '../../routes/docs';
import { createContract, type Contract } from '../helpers/contract';
import {
  createCategory,
  createMember,
  createProduct,
  type DataTarget,
  type TestMember,
} from '../helpers/factories';
import {
  createTestDatabase,
  testConfig,
  type ApiResponse,
  type RequestOptions,
  type TestDatabase,
} from '../helpers/harness';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { quietLogger, NATS_URL, uniquePrefix, until } from './cluster-fixtures';

export interface Instance {
  /** CLUSTER_INSTANCE_ID, kept across restarts. */
  name: string;
  /** The running process, or null while stopped. */
  process: ServerProcess | null;
}

export type WorldMember = TestMember;

export interface WorldOptions {
  instances?: number;
  /** Extra environment for every instance (e.g. CLUSTER_SHARDS). */
  env?: Record<string, string>;
  /** The NATS the instances join: a private server for a test that stops it; the shared one by default. */
  natsUrl?: string;
}

const JWT_SECRET = crypto.randomBytes(32).toString('hex');
// Children of every world in this test process: killed if the process exits without cleaning up (a timeout).
const everyChild = new Set<ServerProcess>();
process.once('exit', () => {
  for (const child of everyChild) if (child.child.exitCode === null) child.child.kill('SIGKILL');
});

/**
 * One HTTP request on a connection of its own (no keep-alive): a server closing an idle keep-alive socket
 * just as the client reuses it would otherwise show up as a cut request, which is not what these tests test.
 */
function send<T>(
  baseUrl: string,
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let payload: string | undefined;
  if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['Content-Type'] ??= 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(payload));
  }
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        const json = (responseHeaders.get('content-type') ?? '').includes('json') && text;
        resolve({
          status: res.statusCode!,
          headers: responseHeaders,
          body: json ? JSON.parse(text) : text,
          text,
        });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

export async function startClusterWorld(label: string, options: WorldOptions = {}) {
  const count = options.instances ?? 3;
  const prefix = uniquePrefix(label);
  const natsUrl = options.natsUrl ?? NATS_URL;
  const database: TestDatabase = await createTestDatabase('mysql');
  const env: Record<string, string> = {
    ...database.env,
    JWT_SECRET,
    NATS_URL: natsUrl,
    CLUSTER_PREFIX: prefix,
    MIGRATE_ON_START: 'false',
    ...options.env,
  };
  const config = testConfig(env);
  const db: Knex = knexFactory(knexConfig(config.database));
  // Members, categories and products are made straight in the database, with the instances' token secret.
  const target: DataTarget = { db, tokens: createTokenService(config.jwt), bcryptCost: config.bcryptCost };
  const instances: Instance[] = Array.from({ length: count }, (_, i) => ({
    name: `${label}-${String.fromCharCode(97 + i)}`,
    process: null,
  }));
  /** Output of every process that ever ran, stopped ones included. */
  const finished: string[] = [];
  let contract: Contract | undefined;
  let turn = 0;

  // Migrated once here, so each instance's start is short (started together they would also wait for one another's
  // migrations: lib/server.ts, prepareDatabase).
  const setup = knexFactory(knexConfig(config.database));
  try {
    await prepareDatabase(setup, { ...config, migrateOnStart: true }, quietLogger());
  } finally {
    await setup.destroy();
  }

  function contractOf(): Contract {
    // The route table is what every instance serves; building an app (never started) yields it.
    contract ??= createContract(buildServedDocument(createApp({ config, db, logger: quietLogger() }).routes));
    return contract;
  }

  async function start(index: number): Promise<ServerProcess> {
    const instance = instances[index];
    if (instance.process) throw new Error(`${instance.name} is running`);
    const child = await startServerProcess({ ...env, CLUSTER_INSTANCE_ID: instance.name });
    everyChild.add(child);
    instance.process = child;
    return child;
  }

  async function stop(index: number, signal: 'SIGKILL' | 'SIGTERM'): Promise<number | null> {
    const instance = instances[index];
    const child = instance.process;
    if (!child) throw new Error(`${instance.name} is not running`);
    if (child.child.exitCode === null) child.child.kill(signal);
    const code = await child.exited;
    finished.push(child.output());
    everyChild.delete(child);
    instance.process = null;
    return code;
  }

  function urlOf(index: number): string {
    const child = instances[index].process;
    if (!child) throw new Error(`${instances[index].name} is not running`);
    return child.url;
  }

  const running = () => instances.map((_, i) => i).filter((i) => instances[i].process !== null);

  const world = {
    prefix,
    db,
    database,
    instances,

    start,
    /** kill -9: no shutdown at all. */
    kill: (index: number) => stop(index, 'SIGKILL'),
    /** Graceful: in-flight requests answered, the shards handed over. */
    terminate: (index: number) => stop(index, 'SIGTERM'),
    /** Starts a stopped instance again under the same CLUSTER_INSTANCE_ID. */
    restart: (index: number) => start(index),

    url: urlOf,
    running,

    /** One request to instance `index`, held against the OpenAPI document. */
    async request<T = any>(
      index: number,
      method: string,
      path: string,
      opts?: RequestOptions,
    ): Promise<ApiResponse<T>> {
      const res = await send<T>(urlOf(index), method, path, opts);
      const problems = contractOf().problems(method, path, res);
      if (problems.length > 0)
        throw new Error(
          `${instances[index].name}: response does not match the OpenAPI document:\n  ${problems.join('\n  ')}`,
        );
      return res;
    },

    /**
     * POST /orders as a well-behaved client: a 503 (a shard caught in a move, a forwarded request that
     * timed out) is retried after its Retry-After with the same Idempotency-Key, so the retry is exact.
     * `retried` lists those 503s.
     */
    async placeOrder(
      index: number,
      token: string,
      body: unknown,
      key: string = crypto.randomUUID(),
    ): Promise<ApiResponse & { retried: string[] }> {
      const retried: string[] = [];
      for (;;) {
        const res = await world.request(index, 'POST', '/api/v1/orders', {
          token,
          body,
          headers: { 'Idempotency-Key': key },
        });
        if (res.status !== 503 || retried.length >= 5) return { ...res, retried };
        retried.push(`${instances[index].name}: ${res.body.message}`);
        const seconds = Number(res.headers.get('retry-after'));
        if (!(seconds > 0)) throw new Error(`503 without Retry-After: ${res.text}`);
        await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      }
    },

    /** The next running instance, round-robin, as a balancer picks. */
    next(): number {
      const live = running();
      if (live.length === 0) throw new Error('no instance is running');
      return live[turn++ % live.length];
    },

    /** Everything every process wrote, the stopped ones included. */
    output(): string {
      return [...finished, ...instances.flatMap((i) => (i.process ? [i.process.output()] : []))].join('\n');
    },

    /** The log lines in which an instance lost a shard lease it did not give up (diagnostics). */
    leaseLosses(): string[] {
      return world
        .output()
        .split('\n')
        .filter((line) => /Lease \S+ lost: /.test(line));
    },

    /**
     * shard -> CLUSTER_INSTANCE_ID of its lease holder, read from the cluster's KV bucket; none while the
     * bucket is missing (after a NATS restart, until an instance creates it again).
     */
    async owners(): Promise<Map<number, string>> {
      const nc = await connect({ servers: natsUrl });
      try {
        const bucket = bucketNames(prefix).shards;
        const kv = await new Kvm(nc).open(bucket);
        const owners = new Map<number, string>();
        const keys = await liveKeys(await jetstreamManager(nc), bucket).catch((err: unknown) => {
          if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return [];
          throw err;
        });
        for (const key of keys) {
          const entry = await kv.get(key);
          const shard = shardFromKey(key);
          if (shard === null || !entry || entry.operation !== 'PUT') continue;
          owners.set(shard, (entry.json() as { instanceId: string }).instanceId);
        }
        return owners;
      } finally {
        await nc.close();
      }
    },

    member: (role: Role, password = 'Password-123'): Promise<WorldMember> =>
      createMember(target, role, { password }),

    category: (name?: string): Promise<number> => createCategory(target, name),

    product: (
      sellerId: number,
      categoryId: number,
      fields: { name?: string; price?: string; stock?: number } = {},
    ): Promise<number> =>
      createProduct(target, sellerId, {
        categoryId,
        name: fields.name,
        price: fields.price,
        stockQuantity: fields.stock ?? 1000,
      }),

    /**
     * Waits until every shard is held by exactly one running instance, each within its fair share
     * (ceil(shards / instances)) and none empty, and the holders stayed the same for a second (a claimed
     * shard is served once its listeners ran): the cluster has settled after a start, stop or restart.
     */
    async settled(withinMs = 15_000): Promise<Map<number, string>> {
      const names = running().map((i) => instances[i].name);
      const shards = config.cluster!.shards;
      let owners = new Map<number, string>();
      let stableSince = Infinity;
      let last = '';
      await until(
        async () => {
          owners = await world.owners();
          const counts = names.map((name) => [...owners.values()].filter((owner) => owner === name).length);
          const fair =
            owners.size === shards &&
            [...owners.values()].every((owner) => names.includes(owner)) &&
            counts.every((n) => n >= 1 && n <= Math.ceil(shards / names.length));
          const now = JSON.stringify([...owners].sort((a, b) => a[0] - b[0]));
          if (!fair || now !== last) stableSince = fair ? Date.now() : Infinity;
          last = now;
          return Date.now() - stableSince >= 1000;
        },
        withinMs,
        () => `shard owners: ${JSON.stringify(Object.fromEntries(owners))}`,
      );
      return owners;
    },

    /** Kills what still runs, deletes the cluster's buckets, drops the database. */
    async close(): Promise<void> {
      await Promise.allSettled(running().map((i) => stop(i, 'SIGKILL')));
      await db.destroy().catch(() => undefined);
      await destroyClusterBuckets(natsUrl, prefix).catch(() => undefined);
      await database.drop();
    },
  };

  try {
    // One after another: each joins and takes its shards before the next arrives (as a rolling deploy).
    for (let i = 0; i < count; i++) await start(i);
    await world.settled();
  } catch (err) {
    await world.close();
    throw err;
  }
  return world;
}

export type ClusterWorld = Awaited<ReturnType<typeof startClusterWorld>>;

/** An order body; the address detail tags it so a test finds its orders afterwards. */
export function orderBody(items: Array<{ productId: number; quantity: number }>, tag = 'cluster') {
  return {
    orderItems: items,
    shippingAddress: {
      zipCode: '04524',
      address: '1 Market Street',
      addressDetail: tag,
      receiverName: 'Kim Buyer',
      receiverPhone: '010-0000-0000',
    },
  };
}
