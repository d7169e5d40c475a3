// `npm run bench:cluster`: the service as a cluster of 1, 2 and 3 instances (`lib/server.ts` processes with
// NATS_URL set, one MariaDB database, one private CLUSTER_PREFIX per configuration) under load spread
// round-robin over the instances from ONE generator (autocannon in this process, its connections spread over
// the instances' URLs, as a balancer spreads them; the cached GET from wrk when installed, its threads spread
// the same way). Scenarios, each measured for every instance count:
//   hot:    one unit of ONE product per order,
//   spread: one unit of one of 1,000 products per order,
//   get:    a cached GET (one product's detail).
// The instance counts alternate between rounds (1, 2, 3, then 3, 2, 1, ...); each configuration starts its
// processes afresh and waits until every shard has its owner before the load starts. After every order
// scenario the books are checked (for every product: initial stock = stock + ordered units, stock >= 0).
// After the rounds, a sell-out phase on a fresh cluster of the most instances (bench/lib/sell-out.ts): the seller
// PATCHes the hot product's stockQuantity to BENCH_SELL_OUT_STOCK through the first instance (the owner may be
// another: it must learn of the change), the buyers order it on every instance until the answers are 409s, and
// the database must show exactly that many units sold, stock 0, none below 0 (`sellOut` in the result file).
// bench/results/cluster-<timestamp>.json holds the machine, the load average before and after every
// scenario, every measurement, their medians and `ratios` ({ value, target, met }): orders/s with 2
// instances over 1 instance, hot >= 0.9x and spread >= 1.0x, cached GET req/s >= 1.3x; zero oversell.
//
// Environment (defaults in brackets): BENCH_MYSQL_URL [mysql://root@127.0.0.1:3306], BENCH_NATS_URL
// [nats://127.0.0.1:4222], BENCH_CONNECTIONS [60: a multiple of 1, 2 and 3], BENCH_DURATION [8 s],
// BENCH_WARMUP [12 s per scenario: each configuration's processes start cold, and each of two instances sees half
// the load, so its JIT settles later; bench/README.md, Cluster, 2026-11-25 08:21], BENCH_ROUNDS [2],
// BENCH_INSTANCES [1,2,3], BENCH_SCENARIOS [hot,spread,get],
// BENCH_DB_POOL_MAX [20 per instance], BENCH_DB_TIMEOUT_MS [60000: patient, as bench:orders],
// BENCH_GET_GENERATOR [wrk when installed (Debian: apt-get install -y wrk), else autocannon]: the generator of
// the cached GET, whose CPU per request is of the order of the service's own (bench/lib/wrk.ts),
// BENCH_SELL_OUT_STOCK [300; 0 skips the sell-out phase], BENCH_SELL_OUT_MAX_S [15].
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import { createTokenService } from '../lib/auth/tokens';
import { bucketNames, destroyClusterBuckets } from '../lib/cluster/cluster';
import { liveKeys } from '../lib/cluster/lease-table';
import { loadConfig } from '../lib/config';
import { knexConfig } from '../lib/db';
import { createLogger } from '../lib/logger';
import { prepareDatabase } from '../lib/server';
import { cpuMicros, reapedChildrenCpuMicros, groupCommitBatches, pidOf } from './lib/metrics';
import { address, seedOrderWorld, type OrderWorld } from './lib/order-world';
import { checkBooks, median, withAdmin } from './lib/books';
import { ROOT, startChild, startScriptFlags, type Child } from './lib/processes';
import { startRunInfo } from './lib/run-info';
import { SELL_OUT_HEADER, sellOut, sellOutLine, type SellOut } from './lib/sell-out';
import { runWrk, wrkAvailable } from './lib/wrk';

type Scenario = 'hot' | 'spread' | 'get';

const env = process.env;
const MYSQL = (env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
const NATS_URL = env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 60);
const DURATION = Number(env.BENCH_DURATION ?? 8);
const WARMUP = Number(env.BENCH_WARMUP ?? 12);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
const COUNTS = (env.BENCH_INSTANCES ?? '1,2,3').split(',').map(Number);
const SCENARIOS = (env.BENCH_SCENARIOS ?? 'hot,spread,get').split(',') as Scenario[];
const POOL_MAX = env.BENCH_DB_POOL_MAX ?? '20';
const DB_TIMEOUT_MS = env.BENCH_DB_TIMEOUT_MS ?? '60000';
const SHARDS = 64;
const SELL_OUT_STOCK = Number(env.BENCH_SELL_OUT_STOCK ?? 300);
const SELL_OUT_MAX_S = Number(env.BENCH_SELL_OUT_MAX_S ?? 15);
// Extra node flags for every instance, e.g. `--cpu-prof --cpu-prof-dir=bench/profiles` to profile them.
// npm start's node flags, then any extra ones (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile).
const SERVER_NODE_ARGS = [
  ...startScriptFlags(),
  ...(env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
];
const SPREAD_PRODUCTS = 1000;
const GET_GENERATOR = env.BENCH_GET_GENERATOR ?? (wrkAvailable() ? 'wrk' : 'autocannon');
if (GET_GENERATOR !== 'wrk' && GET_GENERATOR !== 'autocannon')
  throw new Error('BENCH_GET_GENERATOR must be wrk or autocannon');
/** wrk's threads for the cached GET: a multiple of 1, 2 and 3 instances, so each gets the same share. */
const WRK_THREADS = 6;
const JWT_SECRET = crypto.randomBytes(32).toString('hex');

const TARGETS: Record<Scenario, number> = { hot: 0.9, spread: 1.0, get: 1.3 };
const UNIT: Record<Scenario, string> = { hot: 'orders/s', spread: 'orders/s', get: 'req/s' };

interface Measurement {
  round: number;
  instances: number;
  scenario: Scenario;
  /** The load generator of this measurement. */
  generator: 'autocannon' | 'wrk';
  /** 201s per second for orders, 200s per second for the GET. */
  rate: number;
  p50Ms: number;
  p99Ms: number;
  statuses: Record<string, number>;
  /** Socket errors and timeouts. */
  errors: number;
  loadavgBefore: number[];
  loadavgAfter: number[];
  /** Orders per group-commit transaction over all instances during the scenario (their /metrics). */
  ordersPerCommit?: number;
  /**
   * CPU time (user + system) per successful request over the measured window, in microseconds: all the
   * service instances together, the NATS server, MariaDB. Far less sensitive to the machine's load than the
   * rates, so it shows what a second instance costs per order even on a busy machine.
   */
  cpuUs: { service: number; nats: number; mariadb: number; generator: number };
  /**
   * MariaDB's own counters per successful request over the measured window (SHOW GLOBAL STATUS: whole-server
   * figures, so anything else using the server meanwhile counts too): statements, transactions (commits),
   * row-lock waits and milliseconds spent waiting for row locks.
   */
  db?: { statements: number; commits: number; rowLockWaits: number; rowLockMs: number };
  oversell?: boolean;
  conserved?: boolean;
}

/** Until every shard has an owner among `names` and each holds at least one: the cluster has settled. */
async function settled(prefix: string, names: string[]): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const bucket = bucketNames(prefix).shards;
    const kv = await new Kvm(nc).open(bucket);
    const jsm = await jetstreamManager(nc);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const owners: string[] = [];
      for (const key of await liveKeys(jsm, bucket)) {
        const entry = await kv.get(key);
        if (entry?.operation === 'PUT') owners.push((entry.json() as { instanceId: string }).instanceId);
      }
      const fair = Math.ceil(SHARDS / names.length);
      const counts = names.map((name) => owners.filter((owner) => owner === name).length);
      if (owners.length === SHARDS && counts.every((n) => n >= 1 && n <= fair)) return;
      if (Date.now() > deadline) throw new Error(`shards did not settle: ${counts.join('/')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await nc.close();
  }
}

async function startCluster(
  url: string,
  count: number,
  label: string,
): Promise<{ children: Child[]; prefix: string }> {
  const prefix = `bench-${label}-${crypto.randomBytes(3).toString('hex')}`;
  const children: Child[] = [];
  const names: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${i + 1}`;
      names.push(name);
      const child = await startChild(
        'lib/server.ts',
        {
          NODE_ENV: 'development',
          DATABASE_URL: url,
          JWT_SECRET,
          MIGRATE_ON_START: 'false',
          SEED_ON_START: 'false',
          LOG_LEVEL: 'warn',
          INVENTORY_MODE: 'actor',
          DB_POOL_MAX: POOL_MAX,
          DB_ACQUIRE_TIMEOUT_MS: DB_TIMEOUT_MS,
          DB_STATEMENT_TIMEOUT_MS: DB_TIMEOUT_MS,
          NATS_URL,
          CLUSTER_PREFIX: prefix,
          CLUSTER_INSTANCE_ID: name,
          CLUSTER_SHARDS: String(SHARDS),
        },
        '/health/ready',
        SERVER_NODE_ARGS,
      );
      children.push(child);
      running.add(child);
    }
    await settled(prefix, names);
  } catch (err) {
    await stopCluster({ children, prefix });
    throw err;
  }
  return { children, prefix };
}

/** Ctrl-C kills the running children at once (the bench database mkt_bench_cluster_<pid> is left to drop). */
const running = new Set<Child>();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const child of running) child.process.kill('SIGKILL');
    process.exit(130);
  });

async function stopCluster(cluster: { children: Child[]; prefix: string }): Promise<void> {
  await Promise.all(cluster.children.map((child) => child.stop()));
  for (const child of cluster.children) running.delete(child);
  await destroyClusterBuckets(NATS_URL, cluster.prefix).catch(() => undefined);
}

/** What a load run gives, whichever generator ran it. */
interface LoadResult {
  generator: 'autocannon' | 'wrk';
  /** The answers that count (201 for orders, 200 for the GET). */
  ok: number;
  durationSeconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers by status; wrk tells only 2xx/3xx ("2xx") from the rest ("non-2xx"). */
  statuses: Record<string, number>;
  errors: number;
}

async function run(
  urls: string[],
  fixture: OrderWorld,
  scenario: Scenario,
  seconds: number,
): Promise<LoadResult> {
  const detail = `/api/v1/products/${fixture.spread[0]}`;
  if (scenario === 'get' && GET_GENERATOR === 'wrk') {
    const r = await runWrk({
      urls,
      urlPath: detail,
      connections: CONNECTIONS,
      threads: WRK_THREADS,
      seconds,
    });
    const ok = r.requests - r.non2xx;
    return {
      generator: 'wrk',
      ok,
      durationSeconds: r.durationSeconds,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      statuses: { '2xx': ok, ...(r.non2xx > 0 ? { 'non-2xx': r.non2xx } : {}) },
      errors: r.errors,
    };
  }
  let n = 0;
  const request: autocannon.Request =
    scenario === 'get'
      ? { method: 'GET', path: detail }
      : {
          method: 'POST',
          path: '/api/v1/orders',
          headers: { 'Content-Type': 'application/json' },
          setupRequest: (req) => {
            const productId =
              scenario === 'hot'
                ? fixture.hot
                : fixture.spread[Math.floor(Math.random() * fixture.spread.length)];
            return {
              ...req,
              headers: {
                ...req.headers,
                Authorization: `Bearer ${fixture.tokens[n++ % fixture.tokens.length]}`,
              },
              body: JSON.stringify({ orderItems: [{ productId, quantity: 1 }], shippingAddress: address }),
            };
          },
        };
  const r = await autocannon({
    // autocannon spreads its connections over several URLs (round-robin); its types name only one
    url: urls as unknown as string,
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 60,
    requests: [request],
  });
  const statuses = Object.fromEntries(
    Object.entries(r.statusCodeStats ?? {}).map(([status, s]) => [status, s.count ?? 0]),
  );
  return {
    generator: 'autocannon',
    ok: scenario === 'get' ? (statuses['200'] ?? 0) : (statuses['201'] ?? 0),
    durationSeconds: r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    statuses,
    errors: r.errors + r.timeouts,
  };
}

/**
 * The books after an order scenario, read in ONE snapshot (InnoDB REPEATABLE READ: the transaction's first
 * read fixes it): requests still in flight when the generator stopped may commit meanwhile, and two separate
 * reads could see an order's items without its stock deduction.
 */
async function checkStock(db: Knex, fixture: OrderWorld): Promise<{ oversell: boolean; conserved: boolean }> {
  return db.transaction((trx) => checkBooks(trx, fixture.initial), { isolationLevel: 'repeatable read' });
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const loadavg = () => os.loadavg().map(round2);

type Ratios = Record<string, { value: number; target: string; met: boolean }>;

function summarise(results: Measurement[], sold: SellOut | null) {
  const medians: Record<string, Record<number, number>> = {};
  for (const scenario of SCENARIOS) {
    medians[scenario] = {};
    for (const count of COUNTS) {
      const rates = results
        .filter((r) => r.scenario === scenario && r.instances === count)
        .map((r) => r.rate);
      if (rates.length > 0) medians[scenario][count] = Math.round(median(rates));
    }
  }
  const ratios: Ratios = {};
  const scaling: Record<string, number> = {};
  for (const scenario of SCENARIOS) {
    const one = medians[scenario][1];
    if (!(one > 0)) continue;
    if (medians[scenario][2] !== undefined) {
      const value = round2(medians[scenario][2] / one);
      ratios[`${scenario}: 2 instances / 1 instance ${UNIT[scenario]}`] = {
        value,
        target: `>= ${TARGETS[scenario]}x`,
        met: value >= TARGETS[scenario],
      };
    }
    if (medians[scenario][3] !== undefined)
      scaling[`${scenario}: 3 instances / 1 instance ${UNIT[scenario]}`] = round2(medians[scenario][3] / one);
  }
  const bad = results.filter((r) => r.oversell || r.conserved === false).length;
  ratios['order runs with oversell or unconserved stock'] = { value: bad, target: '0', met: bad === 0 };
  if (sold)
    ratios[`sell-out phase without exactly ${sold.stock} sold, stock 0, none below 0`] = {
      value: sold.ok ? 0 : 1,
      target: '0',
      met: sold.ok,
    };
  return { medians, ratios, scaling };
}

const NATS_PID = pidOf('nats-server');
const MARIADB_PID = pidOf('mariadbd') ?? pidOf('mysqld');

/**
 * CPU time so far of the cluster's instances (together), the NATS server, MariaDB and this process (the
 * generator: autocannon is all it runs while a load is on, or wrk, its child), in microseconds.
 */
function cpuNow(children: Child[]): { service: number; nats: number; mariadb: number; generator: number } {
  const own = process.cpuUsage();
  // wrk runs as a child of this process: its CPU joins our children's once it exited and was reaped.
  return {
    service: children.reduce((sum, child) => sum + cpuMicros(child.process.pid!), 0),
    nats: NATS_PID ? cpuMicros(NATS_PID) : 0,
    mariadb: MARIADB_PID ? cpuMicros(MARIADB_PID) : 0,
    generator: own.user + own.system + reapedChildrenCpuMicros(),
  };
}

const DB_COUNTERS = {
  statements: 'Questions',
  commits: 'Com_commit',
  rowLockWaits: 'Innodb_row_lock_waits',
  rowLockMs: 'Innodb_row_lock_time',
} as const;

/** MariaDB's global counters (statements, commits, row-lock waits and their milliseconds). */
async function dbCounters(db: Knex): Promise<Record<keyof typeof DB_COUNTERS, number>> {
  const [rows] = (await db.raw(
    `SHOW GLOBAL STATUS WHERE Variable_name IN (${Object.values(DB_COUNTERS)
      .map((name) => `'${name}'`)
      .join(', ')})`,
  )) as [Array<{ Variable_name: string; Value: string }>];
  const value = (name: string) => Number(rows.find((row) => row.Variable_name === name)?.Value ?? 0);
  return {
    statements: value(DB_COUNTERS.statements),
    commits: value(DB_COUNTERS.commits),
    rowLockWaits: value(DB_COUNTERS.rowLockWaits),
    rowLockMs: value(DB_COUNTERS.rowLockMs),
  };
}

const perRequest = (micros: number, requests: number) => (requests > 0 ? Math.round(micros / requests) : 0);

function markdown(
  results: Measurement[],
  summary: ReturnType<typeof summarise>,
  sold: (SellOut & { instances: number }) | null,
): string {
  const lines = [
    '| scenario | instances | median | p50 ms | p99 ms | orders per commit | CPU us/request: service, NATS, MariaDB, generator | MariaDB per order: statements, commits | non-2xx (status: count) | errors | oversell | runs |',
    '|---|---:|---:|---:|---:|---:|---|---|---|---:|---|---:|',
  ];
  for (const scenario of SCENARIOS)
    for (const count of COUNTS) {
      const runs = results.filter((r) => r.scenario === scenario && r.instances === count);
      if (runs.length === 0) continue;
      const statuses: Record<string, number> = {};
      for (const r of runs)
        for (const [status, n] of Object.entries(r.statuses))
          if (!status.startsWith('2')) statuses[status] = (statuses[status] ?? 0) + n;
      const other =
        Object.entries(statuses)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', ') || 'none';
      const oversell =
        scenario === 'get' ? '—' : runs.some((r) => r.oversell || r.conserved === false) ? '**YES**' : 'none';
      // A median of two rounds is their mean: rounded for the table (the JSON keeps every run as measured).
      const mid = (pick: (r: Measurement) => number, digits: number) =>
        Number(median(runs.map(pick)).toFixed(digits));
      const perCommit = scenario === 'get' ? '—' : mid((r) => r.ordersPerCommit ?? 0, 1);
      const cpu = (['service', 'nats', 'mariadb', 'generator'] as const).map((part) =>
        mid((r) => r.cpuUs[part], 0),
      );
      const perOrder =
        scenario === 'get'
          ? '—'
          : (['statements', 'commits'] as const).map((part) => mid((r) => r.db?.[part] ?? 0, 2)).join(', ');
      lines.push(
        `| ${scenario === 'get' ? `get (${GET_GENERATOR})` : scenario} | ${count} | ${summary.medians[scenario][count]} ${UNIT[scenario]} | ${mid((r) => r.p50Ms, 1)} | ${mid((r) => r.p99Ms, 1)} | ${perCommit} | ${cpu.join(', ')} | ${perOrder} | ${other} | ${runs.reduce((s, r) => s + r.errors, 0)} | ${oversell} | ${runs.length} |`,
      );
    }
  if (sold) lines.push('', ...SELL_OUT_HEADER, sellOutLine(`${sold.instances} instances`, sold));
  lines.push('', '| ratio | value | target | met |', '|---|---:|---|---|');
  for (const [name, r] of Object.entries(summary.ratios))
    lines.push(
      `| ${name} | ${r.value}${name.includes('/') ? 'x' : ''} | ${r.target} | ${r.met ? 'yes' : '**not met**'} |`,
    );
  for (const [name, value] of Object.entries(summary.scaling))
    lines.push(`| ${name} | ${value}x | (none) | — |`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const runInfo = startRunInfo();
  if (CONNECTIONS % 6 !== 0)
    console.warn('BENCH_CONNECTIONS is best a multiple of 6 (even spread over 1, 2, 3 URLs)');
  console.log(
    `bench:cluster — ${CONNECTIONS} connections from one generator, ${DURATION} s measured after ${WARMUP} s warm-up, ${ROUNDS} round(s), instances ${COUNTS.join('/')}, scenarios ${SCENARIOS.join('/')}; ${os.cpus().length} CPUs, load ${loadavg().join(' ')}, Node ${process.version}`,
  );
  const name = `mkt_bench_cluster_${process.pid}`;
  const url = `${MYSQL}/${name}`;
  await withAdmin(MYSQL, (admin) =>
    admin.raw(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`),
  );
  const config = loadConfig({
    NODE_ENV: 'development',
    DATABASE_URL: url,
    JWT_SECRET,
    SEED_ON_START: 'false',
  });
  const db = knexFactory(knexConfig(config.database));
  const results: Measurement[] = [];
  let sold: (SellOut & { instances: number }) | null = null;
  try {
    await prepareDatabase(db, config, createLogger({ level: 'warn', format: 'line' }));
    const fixture = await seedOrderWorld(db, {
      buyers: CONNECTIONS,
      spreadProducts: SPREAD_PRODUCTS,
      signer: createTokenService(loadConfig({ NODE_ENV: 'development', JWT_SECRET }).jwt),
    });
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? COUNTS : [...COUNTS].reverse();
      for (const count of order) {
        const cluster = await startCluster(url, count, `r${round}n${count}`);
        try {
          const urls = cluster.children.map((child) => child.url);
          for (const scenario of SCENARIOS) {
            process.stdout.write(`round ${round}, ${count} instance(s), ${scenario} ... `);
            if (WARMUP > 0) await run(urls, fixture, scenario, WARMUP);
            const loadavgBefore = loadavg();
            const before = await groupCommitBatches(urls);
            const dbBefore = await dbCounters(db);
            const cpuBefore = cpuNow(cluster.children);
            const r = await run(urls, fixture, scenario, DURATION);
            const cpuAfter = cpuNow(cluster.children);
            const dbAfter = await dbCounters(db);
            const loadavgAfter = loadavg();
            const after = await groupCommitBatches(urls);
            const commits = after.count - before.count;
            const { ok, statuses } = r;
            const m: Measurement = {
              round,
              instances: count,
              scenario,
              generator: r.generator,
              rate: Math.round(ok / r.durationSeconds),
              p50Ms: r.p50Ms,
              p99Ms: r.p99Ms,
              statuses,
              errors: r.errors,
              loadavgBefore,
              loadavgAfter,
              cpuUs: {
                service: perRequest(cpuAfter.service - cpuBefore.service, ok),
                nats: perRequest(cpuAfter.nats - cpuBefore.nats, ok),
                mariadb: perRequest(cpuAfter.mariadb - cpuBefore.mariadb, ok),
                generator: perRequest(cpuAfter.generator - cpuBefore.generator, ok),
              },
              ...(scenario === 'get'
                ? {}
                : {
                    db: {
                      statements: round2((dbAfter.statements - dbBefore.statements) / Math.max(1, ok)),
                      commits: round2((dbAfter.commits - dbBefore.commits) / Math.max(1, ok)),
                      rowLockWaits: round2((dbAfter.rowLockWaits - dbBefore.rowLockWaits) / Math.max(1, ok)),
                      rowLockMs: dbAfter.rowLockMs - dbBefore.rowLockMs,
                    },
                    ...(await checkStock(db, fixture)),
                    ordersPerCommit: commits > 0 ? round2((after.sum - before.sum) / commits) : 0,
                  }),
            };
            results.push(m);
            process.stdout.write(
              `${m.rate} ${UNIT[scenario]}, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, statuses ${JSON.stringify(statuses)}, errors ${m.errors}${
                scenario === 'get'
                  ? ''
                  : `, oversell ${m.oversell ? 'YES' : 'no'}, conserved ${m.conserved ? 'yes' : 'NO'}`
              }${m.ordersPerCommit !== undefined ? `, ${m.ordersPerCommit} orders per commit` : ''}, CPU us/request service ${m.cpuUs.service} NATS ${m.cpuUs.nats} MariaDB ${m.cpuUs.mariadb} generator ${m.cpuUs.generator}${
                m.db
                  ? `, per order ${m.db.statements} statements ${m.db.commits} commits ${m.db.rowLockWaits} row-lock waits (${m.db.rowLockMs} ms waited in all)`
                  : ''
              }, load ${loadavgAfter[0]}\n`,
            );
          }
        } finally {
          await stopCluster(cluster);
        }
      }
    }
    if (SELL_OUT_STOCK > 0) {
      const instances = Math.max(...COUNTS);
      process.stdout.write(`sell-out of ${SELL_OUT_STOCK} on ${instances} instance(s) ... `);
      const cluster = await startCluster(url, instances, 'sellout');
      try {
        const s = await sellOut({
          urls: cluster.children.map((child) => child.url),
          db,
          world: fixture,
          stock: SELL_OUT_STOCK,
          connections: CONNECTIONS,
          maxSeconds: SELL_OUT_MAX_S,
          repeatableRead: true,
        });
        sold = { instances, ...s };
        process.stdout.write(
          `${s.sold} sold (201s ${s.accepted}, 409s ${s.refused}, other ${s.errors}) in ${s.seconds} s, final stock ${s.finalStock}, products below 0: ${s.negativeStock}, ${s.ok ? 'exactly N sold' : 'NOT exactly N sold'}\n`,
        );
      } finally {
        await stopCluster(cluster);
      }
    }
  } finally {
    await db.destroy();
    await withAdmin(MYSQL, (admin) => admin.raw(`DROP DATABASE IF EXISTS \`${name}\``));
  }

  const summary = summarise(results, sold);
  const table = markdown(results, summary, sold);
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `cluster-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(
    file,
    `${JSON.stringify(
      {
        benchmark: 'cluster',
        at: new Date().toISOString(),
        settings: {
          connections: CONNECTIONS,
          durationSeconds: DURATION,
          warmupSeconds: WARMUP,
          rounds: ROUNDS,
          instances: COUNTS,
          scenarios: SCENARIOS,
          shards: SHARDS,
          dbPoolMaxPerInstance: Number(POOL_MAX),
          dbTimeoutMs: Number(DB_TIMEOUT_MS),
          spreadProducts: SPREAD_PRODUCTS,
          serverNodeArgs: SERVER_NODE_ARGS,
          getGenerator: GET_GENERATOR,
          sellOutStock: SELL_OUT_STOCK,
          sellOutMaxSeconds: SELL_OUT_MAX_S,
        },
        run: runInfo.finish(),
        results,
        medians: summary.medians,
        ratios: summary.ratios,
        scaling: summary.scaling,
        sellOut: sold,
        markdown: table,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\n${table}\n\nresults: ${path.relative(ROOT, file)}`);
  if (results.some((r) => r.oversell || r.conserved === false) || (sold && !sold.ok)) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
