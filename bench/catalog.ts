// `npm run bench:catalog -- [--db mysql|sqlite] [--products 100000] [--duration 10] [--warmup 2] [--connections 32]
//   [--reseed] [--database-url mysql://root@127.0.0.1:3306/mkt_bench_catalog] [--data-dir <dir>] [--log-level warn]
//   [--only <regex>] [--generator wrk|autocannon]`
// Fills a MariaDB (or SQLite) catalogue with the demo seed (scripts/seed-demo.ts), starts the real service and a bare
// Koa hello-world as child processes, loads each endpoint with wrk (bench/lib/wrk.ts; autocannon in this process
// only when wrk is not installed, or chosen by --generator / BENCH_GET_GENERATOR), and writes
// bench/results/catalog-<timestamp>.json plus a markdown table with the two target ratios:
//   cursor page at depth 90k within 1.5x (p50) of the first page; cached GETs >= 0.7x the bare Koa rate.
// A generator that costs the CPU of the service it measures caps every scenario near the same rate, so a full
// pipeline can "match" hello-world (autocannon did: ~25 us of CPU per request here). The file records the
// generator and its CPU per request for every scenario, and how busy the measured server process was (its CPU
// time over the wall time, in cores). A req/s ratio compares two saturated servers only when both were busy at
// least SATURATED (0.85) of a core; otherwise something else (the generator, the shared machine) set the rate,
// and the ratio is `valid: false` (and `met: false`, with a `note`).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../lib/config';
import { createDb, type Db } from '../lib/db';
import { encodeCursor } from '../lib/products/cursor';
import { ensureMysqlDatabase, fillCatalog } from './lib/catalog-fill';
import { explainCatalog, planTable, type PlanRow } from './lib/catalog-explain';
import { dbName, type BenchDb } from './lib/db-flag';
import { cpuMicros, reapedChildrenCpuMicros } from './lib/metrics';
import { ROOT, startChild, startScriptFlags, type Child } from './lib/processes';
import { startRunInfo } from './lib/run-info';
import { runWrk, wrkAvailable } from './lib/wrk';

type Generator = 'wrk' | 'autocannon';

interface Options {
  db: BenchDb;
  /** SQLite: the service's DATA_DIR, holding the bench database (seeded once, reused). */
  dataDir: string;
  products: number;
  duration: number;
  warmup: number;
  connections: number;
  reseed: boolean;
  databaseUrl: string;
  logLevel: string;
  /** Only scenarios whose name matches (the two baselines always run). */
  only: RegExp | null;
  /** The load generator: wrk when installed (a C program, a few us of CPU per request), else autocannon. */
  generator: Generator;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    db: 'mysql',
    dataDir: path.join(os.tmpdir(), 'mkt-bench-catalog-sqlite'),
    products: 100_000,
    duration: 10,
    warmup: 2,
    connections: 32,
    reseed: false,
    databaseUrl: process.env.BENCH_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/mkt_bench_catalog',
    logLevel: 'warn',
    only: null,
    generator:
      (process.env.BENCH_GET_GENERATOR as Generator | undefined) ?? (wrkAvailable() ? 'wrk' : 'autocannon'),
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--products':
      case '--duration':
      case '--warmup':
      case '--connections': {
        const n = Number(value());
        if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a number`);
        o[flag.slice(2) as 'products' | 'duration' | 'warmup' | 'connections'] = n;
        break;
      }
      case '--db':
        o.db = dbName(value());
        break;
      case '--data-dir':
        o.dataDir = value();
        break;
      case '--reseed':
        o.reseed = true;
        break;
      case '--database-url':
        o.databaseUrl = value();
        break;
      case '--log-level':
        o.logLevel = value();
        break;
      case '--only':
        o.only = new RegExp(value(), 'i');
        break;
      case '--generator':
        o.generator = value() as Generator;
        break;
      default:
        throw new Error(`Unknown argument ${argv[i]}`);
    }
  }
  if (o.generator !== 'wrk' && o.generator !== 'autocannon')
    throw new Error('--generator (BENCH_GET_GENERATOR) is wrk or autocannon');
  if (o.generator === 'wrk' && !wrkAvailable())
    throw new Error('wrk is not installed (apt-get install -y wrk)');
  return o;
}

/**
 * SQLite: the database file in --data-dir, migrated and filled like MariaDB's, not ANALYZEd here (the service
 * takes its own statistics (`PRAGMA optimize` when it opens the database), as bench:keyword does).
 */
async function prepareSqlite(o: Options): Promise<Db> {
  if (o.reseed) fs.rmSync(o.dataDir, { recursive: true, force: true });
  fs.mkdirSync(o.dataDir, { recursive: true });
  const env: Record<string, string | undefined> = {
    ...process.env,
    NODE_ENV: 'development',
    DATA_DIR: o.dataDir,
    BCRYPT_COST: '10',
  };
  delete env.DATABASE_URL;
  const config = loadConfig(env as Record<string, string>);
  const db = createDb(config.database);
  await fillCatalog(db, config, o.products, `${o.dataDir} (--reseed to start over)`);
  return db;
}

/** Creates the bench database if needed (or afresh with --reseed), migrates it and tops it up to N products. */
async function prepareDatabase(o: Options): Promise<Db> {
  if (o.db === 'sqlite') return prepareSqlite(o);
  const name = await ensureMysqlDatabase(o.databaseUrl, o.reseed);
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: o.databaseUrl,
    BCRYPT_COST: '10',
  } as Record<string, string>);
  const db = createDb(config.database);
  await fillCatalog(db, config, o.products, `${name} (--reseed to start over)`);
  await db.raw('ANALYZE TABLE products');
  return db;
}

interface Scenario {
  name: string;
  group: 'baseline' | 'list' | 'offset' | 'cursor' | 'cached';
  path: string;
}

interface Measured extends Scenario {
  generator: Generator;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /**
   * CPU time (user + system) per request over the measured window, in microseconds: the process answering
   * (the service or bare Koa) and the generator (wrk, a reaped child; or this process, autocannon).
   */
  cpuUsPerRequest: { server: number; generator: number };
  /** The measured server process's CPU time over the wall time (1 = one core busy all along). */
  serverBusyCores: number;
}

interface Load {
  requests: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

const VISIBLE = ['ON_SALE', 'SOLD_OUT'];

/** A cursor positioned after the first `depth` visible products (createdAt desc, id desc). */
async function cursorAtDepth(db: Db, depth: number): Promise<string> {
  const row = await db('products')
    .whereIn('status', VISIBLE)
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .offset(depth - 1)
    .first('id', 'created_at');
  return encodeCursor({ createdAt: new Date(row.created_at), id: row.id });
}

async function scenarios(db: Db): Promise<Scenario[]> {
  const visible = Number((await db('products').whereIn('status', VISIBLE).count({ n: '*' }).first())?.n ?? 0);
  const category = await db('categories').where({ name: 'Audio' }).first('id');
  const product = await db('products')
    .where('status', 'ON_SALE')
    .orderBy('id')
    .offset(Math.floor(visible / 2))
    .first('id');
  const seller = await db('members').where({ email: 'demo-seller-3@marketplace.test' }).first('id');
  // Depths beyond the catalogue (a small smoke run) are skipped rather than measured as empty pages.
  const deep = async (depth: number) =>
    visible > depth ? encodeURIComponent(await cursorAtDepth(db, depth)) : null;
  const cursor10k = await deep(10_000);
  const cursor90k = await deep(90_000);
  if (!cursor90k)
    process.stderr.write(`Only ${visible} visible products: depth scenarios beyond that are skipped\n`);
  const p = '/api/v1/products';
  return [
    { name: 'bare Koa hello-world', group: 'baseline', path: '/' },
    { name: 'list default (createdAt desc)', group: 'list', path: p },
    { name: 'list sort price asc', group: 'list', path: `${p}?sort=price,asc` },
    { name: 'list sort salesCount desc', group: 'list', path: `${p}?sort=salesCount,desc` },
    {
      name: 'list categoryId + price range, price desc',
      group: 'list',
      path: `${p}?categoryId=${category.id}&minPrice=50&maxPrice=500&sort=price,desc`,
    },
    { name: 'list sellerId', group: 'list', path: `${p}?sellerId=${seller.id}` },
    { name: 'list keyword', group: 'list', path: `${p}?keyword=lamp` },
    { name: 'offset page depth 0', group: 'offset', path: `${p}?page=0&size=20` },
    ...(cursor10k
      ? [{ name: 'offset page depth 10k', group: 'offset' as const, path: `${p}?page=500&size=20` }]
      : []),
    ...(cursor90k
      ? [{ name: 'offset page depth 90k', group: 'offset' as const, path: `${p}?page=4500&size=20` }]
      : []),
    { name: 'cursor depth 0', group: 'cursor', path: `${p}/cursor?limit=20` },
    ...(cursor10k
      ? [
          {
            name: 'cursor depth 10k',
            group: 'cursor' as const,
            path: `${p}/cursor?limit=20&cursor=${cursor10k}`,
          },
        ]
      : []),
    ...(cursor90k
      ? [
          {
            name: 'cursor depth 90k',
            group: 'cursor' as const,
            path: `${p}/cursor?limit=20&cursor=${cursor90k}`,
          },
        ]
      : []),
    { name: 'popular (cached)', group: 'cached', path: `${p}/popular` },
    { name: 'product detail (cached)', group: 'cached', path: `${p}/${product.id}` },
    { name: 'categories (cached)', group: 'cached', path: '/api/v1/categories' },
    { name: 'bare Koa hello-world (again)', group: 'baseline', path: '/' },
  ];
}

/** wrk's threads: one per core of this 2-core machine, never more than the connections. */
const WRK_THREADS = 2;

async function measure(url: string, o: Options, seconds: number): Promise<Load> {
  if (o.generator === 'wrk') {
    const { origin, pathname, search } = new URL(url);
    const r = await runWrk({
      urls: [origin],
      urlPath: pathname + search,
      connections: o.connections,
      threads: Math.min(WRK_THREADS, o.connections),
      seconds,
    });
    return {
      requests: r.requests,
      requestsPerSecond: r.requests / r.durationSeconds,
      p50: r.p50Ms,
      p99: r.p99Ms,
      non2xx: r.non2xx,
      errors: r.errors,
    };
  }
  const r = await autocannon({ url, connections: o.connections, duration: seconds, timeout: 30 });
  return {
    requests: r.requests.total,
    requestsPerSecond: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/** This process's CPU and its reaped children's (wrk's, once it exited), in microseconds. */
function generatorCpuMicros(): number {
  const own = process.cpuUsage();
  return own.user + own.system + reapedChildrenCpuMicros();
}

/** A Node server busy at least this share of a core is the limit of its own rate. */
const SATURATED = 0.85;

/**
 * `valid` (req/s ratios only): false when the service route or either bare Koa run was busy less than SATURATED
 * of a core: then the generator or the machine, not the server, set a rate; such a ratio is `met: false`.
 */
type Ratios = Record<string, { value: number; target: string; met: boolean; valid?: boolean; note?: string }>;

function markdown(results: Measured[], ratios: Ratios, generator: Generator): string {
  const lines = [
    `| scenario | req/s | p50 ms | p99 ms | non-2xx | CPU us/request: server, generator (${generator}) |`,
    '|---|---:|---:|---:|---:|---|',
  ];
  for (const r of results)
    lines.push(
      `| ${r.name} | ${Math.round(r.requestsPerSecond)} | ${r.p50} | ${r.p99} | ${r.non2xx + r.errors} | ${r.cpuUsPerRequest.server}, ${r.cpuUsPerRequest.generator} |`,
    );
  lines.push('', '| target | measured | goal | met |', '|---|---:|---|---|');
  for (const [name, r] of Object.entries(ratios))
    lines.push(
      `| ${name} | ${r.value.toFixed(2)}x | ${r.target} | ${r.valid === false ? `NOT VALID: ${r.note}` : r.met ? 'yes' : 'NO'} |`,
    );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  if (o.db === 'sqlite' && process.env.DATABASE_URL)
    throw new Error('--db sqlite: unset DATABASE_URL (the service child would open MariaDB)');
  const runInfo = startRunInfo();
  const db = await prepareDatabase(o);
  let plans: PlanRow[];
  let app: Child | null = null;
  let hello: Child | null = null;
  const results: Measured[] = [];
  try {
    plans = await explainCatalog(db);
    const list = (await scenarios(db)).filter(
      (s) => !o.only || s.group === 'baseline' || o.only.test(s.name),
    );
    app = await startChild(
      'lib/server.ts',
      {
        NODE_ENV: 'production',
        // SQLite: no DATABASE_URL, so the service opens marketplace.sqlite in DATA_DIR.
        ...(o.db === 'mysql' && { DATABASE_URL: o.databaseUrl }),
        JWT_SECRET: crypto.randomBytes(32).toString('hex'),
        SEED_ON_START: 'false',
        LOG_LEVEL: o.logLevel,
        DATA_DIR: o.db === 'mysql' ? path.join(os.tmpdir(), 'mkt-bench-catalog') : o.dataDir,
      },
      '/health/ready',
      startScriptFlags(),
    );
    hello = await startChild('bench/lib/hello-koa.ts', {}, '/');
    for (const scenario of list) {
      const base = scenario.group === 'baseline' ? hello.url : app.url;
      const probe = await fetch(base + scenario.path);
      if (probe.status !== 200)
        throw new Error(`${scenario.name}: ${scenario.path} answered ${probe.status}`);
      if (o.warmup > 0) await measure(base + scenario.path, o, o.warmup);
      const server = (scenario.group === 'baseline' ? hello : app).process.pid!;
      const serverBefore = cpuMicros(server);
      const generatorBefore = generatorCpuMicros();
      const wallBefore = performance.now();
      const r = await measure(base + scenario.path, o, o.duration);
      const wallMicros = (performance.now() - wallBefore) * 1000;
      const serverMicros = cpuMicros(server) - serverBefore;
      const perRequest = (micros: number) => Math.round(micros / Math.max(1, r.requests));
      const m: Measured = {
        ...scenario,
        generator: o.generator,
        requestsPerSecond: r.requestsPerSecond,
        p50: r.p50,
        p99: r.p99,
        non2xx: r.non2xx,
        errors: r.errors,
        cpuUsPerRequest: {
          server: perRequest(serverMicros),
          generator: perRequest(generatorCpuMicros() - generatorBefore),
        },
        serverBusyCores: Number((serverMicros / wallMicros).toFixed(2)),
      };
      results.push(m);
      process.stderr.write(
        `${scenario.name.padEnd(45)} ${String(Math.round(m.requestsPerSecond)).padStart(7)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms  CPU us/req server ${m.cpuUsPerRequest.server} ${o.generator} ${m.cpuUsPerRequest.generator}  server busy ${m.serverBusyCores} cores\n`,
      );
    }
  } finally {
    await app?.stop();
    await hello?.stop();
    await db.destroy();
  }

  const by = (name: string) => results.find((r) => r.name === name) ?? { requestsPerSecond: NaN, p50: NaN };
  const bare =
    (by('bare Koa hello-world').requestsPerSecond + by('bare Koa hello-world (again)').requestsPerSecond) / 2;
  const ratios: Ratios = {};
  if (
    results.some((r) => r.name === 'cursor depth 90k') &&
    results.some((r) => r.name === 'cursor depth 0')
  ) {
    const value = by('cursor depth 90k').p50 / Math.max(by('cursor depth 0').p50, 0.001);
    ratios['cursor depth 90k p50 / cursor depth 0 p50'] = { value, target: '<= 1.5x', met: value <= 1.5 };
  }
  // Both sides of a req/s ratio must be saturated servers, else the generator or the machine set the rate.
  const unsaturated = results
    .filter((r) => r.group === 'baseline' || r.group === 'cached')
    .filter((r) => r.serverBusyCores < SATURATED)
    .map((r) => `${r.name} (${r.serverBusyCores})`);
  for (const name of ['popular (cached)', 'product detail (cached)', 'categories (cached)'].filter((n) =>
    results.some((r) => r.name === n),
  )) {
    const value = by(name).requestsPerSecond / bare;
    ratios[`${name} req/s / bare Koa req/s`] =
      unsaturated.length === 0
        ? { value, target: '>= 0.7x', met: value >= 0.7, valid: true }
        : {
            value,
            target: '>= 0.7x',
            met: false,
            valid: false,
            note: `a server was busy less than ${SATURATED} of a core: ${unsaturated.join(', ')}`,
          };
  }

  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `catalog-${o.db}-${stamp}.json`);
  const report = {
    benchmark: 'catalog',
    at: new Date().toISOString(),
    options: { ...o, databaseUrl: o.databaseUrl.replace(/\/\/[^@]*@/, '//***@') },
    run: runInfo.finish(),
    results,
    generator: o.generator,
    bareKoaRequestsPerSecond: bare,
    unsaturatedServers: unsaturated,
    ratios,
    plans,
  };
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(markdown(results, ratios, o.generator));
  console.log(`\nEXPLAIN (${o.db === 'mysql' ? 'MariaDB' : 'SQLite'}):\n${planTable(plans)}`);
  console.log(`\nWritten ${path.relative(ROOT, file)}`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exitCode = 1;
});
