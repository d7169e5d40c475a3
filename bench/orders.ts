// `npm run bench:orders [-- --db mysql|sqlite]`: order throughput of the two inventory modes on MariaDB
// with its default (durable) settings, or on the embedded SQLite (a fresh file per run). One run measures both modes alternately (actor, transactional, actor, ...) under
//   hot:    C concurrent buyers ordering one unit of ONE product,
//   spread: the same over 1,000 products,
//   cart:   3 distinct products (of the 1,000) per order,
// and reports orders/s, p50/p99 latency, errors and an oversell check (initial stock = stock + ordered
// units, stock never negative) after each run. A 201 is an order, a 409 a refusal; anything else (a 503
// shed by a DB timeout, a 500, a socket error) counts as an error. The server gets patient DB timeouts
// (BENCH_DB_TIMEOUT_MS [60000]): the 5 s defaults shed the queued transactional baseline as 503s, and the
// baseline must measure throughput, not shedding. The server is the real one (`lib/server.ts`) in its own
// process with a fresh database per run; this process only drives HTTP load over keep-alive sockets.
// Every product has BIG_STOCK units, so the measured rounds cannot oversell; after them, each run (round and
// mode) ends with a sell-out phase (bench/lib/sell-out.ts): the seller PATCHes the hot product's stockQuantity to
// BENCH_SELL_OUT_STOCK units through the API, the buyers order it until the answers are 409s, and the database
// must show exactly that many units sold, stock 0 and no stock below 0 (`sellOut` in the result file).
//
// Environment (defaults in brackets): BENCH_MYSQL_URL [mysql://root@127.0.0.1:3306], BENCH_CONCURRENCY [64],
// BENCH_DURATION_MS [10000], BENCH_WARMUP_MS [2000], BENCH_ROUNDS [2], BENCH_SCENARIOS [hot,spread,cart],
// BENCH_MODES [actor,transactional], BENCH_DB_POOL_MAX [20], BENCH_SERVER_NODE_ARGS (flags for the server process,
// after the ones `npm start` gives it), BENCH_SELL_OUT_STOCK [300; 0 skips the phase], BENCH_SELL_OUT_MAX_S [15].
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import autocannon from 'autocannon';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory from 'knex';
import { createTokenService } from '../lib/auth/tokens';
import { loadConfig } from '../lib/config';
import { knexConfig } from '../lib/db';
import { address, seedOrderWorld, type OrderWorld } from './lib/order-world';
import { checkBooks, median, withAdmin } from './lib/books';
import { dbFlag } from './lib/db-flag';
import { startScriptFlags } from './lib/processes';
import { startRunInfo } from './lib/run-info';
import { SELL_OUT_HEADER, sellOut, sellOutLine, type SellOut } from './lib/sell-out';
import { cpuMicros, groupCommitBatches, machineTicks, peakRssMb, pidOf } from './lib/metrics';

type Mode = 'actor' | 'transactional';
type Scenario = 'hot' | 'spread' | 'cart';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;
const MYSQL = (env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
const CONCURRENCY = Number(env.BENCH_CONCURRENCY ?? 64);
const DURATION_MS = Number(env.BENCH_DURATION_MS ?? 10_000);
const WARMUP_MS = Number(env.BENCH_WARMUP_MS ?? 2_000);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
const SCENARIOS = (env.BENCH_SCENARIOS ?? 'hot,spread,cart').split(',') as Scenario[];
const MODES = (env.BENCH_MODES ?? 'actor,transactional').split(',') as Mode[];
const POOL_MAX = env.BENCH_DB_POOL_MAX ?? '20';
const DB_TIMEOUT_MS = env.BENCH_DB_TIMEOUT_MS ?? '60000';
const SELL_OUT_STOCK = Number(env.BENCH_SELL_OUT_STOCK ?? 300);
const SELL_OUT_MAX_S = Number(env.BENCH_SELL_OUT_MAX_S ?? 15);

const DB = dbFlag();
// Extra node flags for the server process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
const SERVER_NODE_ARGS = [
  ...startScriptFlags(),
  ...(env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
];
const SPREAD_PRODUCTS = 1000;
const MARIADB_PID = pidOf('mariadbd') ?? pidOf('mysqld');

interface RunResult {
  round: number;
  mode: Mode;
  scenario: Scenario;
  ordersPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** 409 answers (refusals); none are expected with the bench's stock. */
  refused: number;
  errors: number;
  errorSamples: string[];
  /** The server process's CPU time (user + system) over the measured window per 201, in microseconds. */
  serverCpuUsPerOrder: number;
  /**
   * Where the machine's CPU went over the measured window, per 201, in microseconds: this process (the load
   * generator), and MariaDB's server process (null on SQLite, which runs inside the server).
   */
  generatorCpuUsPerOrder: number;
  databaseCpuUsPerOrder: number | null;
  /** The share of the machine's CPU time (all cores) that was not idle over the measured window, in percent. */
  machineBusyPercent: number;
  /** Requests per group-commit transaction (actor mode; null in transactional mode). */
  ordersPerCommit: number | null;
  /** The server process's peak resident memory since it started (VmHWM), after this scenario, in MB. */
  serverPeakRssMb: number;
  oversell: boolean;
  conserved: boolean;
}

/** Where one run's server keeps its data: a fresh MariaDB database, or a fresh SQLite file. */
type Target = { client: 'mysql'; url: string } | { client: 'sqlite'; dataDir: string };

function startServer(target: Target, mode: Mode): Promise<{ child: ChildProcess; port: number }> {
  const { DATABASE_URL: _ignored, ...inherited } = env;
  const child = spawn(process.execPath, [...SERVER_NODE_ARGS, '--import', 'tsx', 'lib/server.ts'], {
    cwd: root,
    env: {
      ...inherited,
      NODE_ENV: 'development',
      PORT: '0',
      HOST: '127.0.0.1',
      ...(target.client === 'mysql' ? { DATABASE_URL: target.url } : { DATA_DIR: target.dataDir }),
      DB_POOL_MAX: POOL_MAX,
      DB_ACQUIRE_TIMEOUT_MS: DB_TIMEOUT_MS,
      DB_STATEMENT_TIMEOUT_MS: DB_TIMEOUT_MS,
      SEED_ON_START: 'false',
      // Only warnings: the per-request access line would otherwise be measured as well.
      LOG_LEVEL: 'warn',
      INVENTORY_MODE: mode,
      BCRYPT_COST: '10',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 100_000) output = output.slice(-50_000);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)));
    // LOG_LEVEL=warn hides "Listening on": poll the readiness endpoint of the port the process opened.
    const started = Date.now();
    const poll = async () => {
      const port = await findPort(child.pid!);
      if (port) {
        const ok = await get(`http://127.0.0.1:${port}/health/ready`).catch(() => 0);
        if (ok === 200) return resolve({ child, port });
      }
      if (Date.now() - started > 60_000) return reject(new Error(`server did not start: ${output}`));
      setTimeout(poll, 200);
    };
    void poll();
  });
}

/** The TCP port a process listens on (Linux /proc), so the server can run on port 0. */
async function findPort(pid: number): Promise<number | null> {
  try {
    const inodes = new Set<string>();
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      const link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      const match = /^socket:\[(\d+)\]$/.exec(link);
      if (match) inodes.add(match[1]);
    }
    for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9])) return parseInt(cols[1].split(':')[1], 16);
    }
  } catch {
    // not started yet
  }
  return null;
}

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

/** The server's token signer: outside production its JWT secret lives in its DATA_DIR (SQLite) or the default. */
function signerFor(target: Target) {
  const config = loadConfig({
    NODE_ENV: 'development',
    ...(target.client === 'sqlite' && { DATA_DIR: target.dataDir }),
  });
  return createTokenService(config.jwt);
}

/**
 * One scenario against the server: CONCURRENCY keep-alive connections (autocannon, in this process), each
 * one buyer with its own token, warmed up, then measured. Besides orders/s and latency it records the
 * server's CPU per order over the measured window, which depends far less on the machine's load than the
 * rate does.
 */
async function load(server: { port: number; pid: number }, fixture: OrderWorld, scenario: Scenario) {
  let connection = 0;
  const pick = () => fixture.spread[Math.floor(Math.random() * fixture.spread.length)];
  const items = (): Array<{ productId: number; quantity: number }> => {
    if (scenario === 'hot') return [{ productId: fixture.hot, quantity: 1 }];
    if (scenario === 'spread') return [{ productId: pick(), quantity: 1 }];
    const set = new Set<number>();
    while (set.size < 3) set.add(pick());
    return [...set].map((productId) => ({ productId, quantity: 1 }));
  };
  const run = (ms: number) =>
    autocannon({
      url: `http://127.0.0.1:${server.port}`,
      connections: CONCURRENCY,
      duration: ms / 1000,
      timeout: 120,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/orders',
          setupRequest: (req, context: { token?: string }) => {
            context.token ??= fixture.tokens[connection++ % fixture.tokens.length];
            return {
              ...req,
              headers: { Authorization: `Bearer ${context.token}`, 'Content-Type': 'application/json' },
              body: JSON.stringify({ orderItems: items(), shippingAddress: address }),
            };
          },
        },
      ],
    });
  const url = `http://127.0.0.1:${server.port}`;
  await run(WARMUP_MS);
  const batchesBefore = await groupCommitBatches([url]);
  const cpuBefore = cpuMicros(server.pid);
  const generatorBefore = process.cpuUsage();
  const databaseBefore = MARIADB_PID && DB === 'mysql' ? cpuMicros(MARIADB_PID) : null;
  const ticksBefore = machineTicks();
  const result = await run(DURATION_MS);
  const cpu = cpuMicros(server.pid) - cpuBefore;
  const generator = process.cpuUsage(generatorBefore);
  const database = databaseBefore === null ? null : cpuMicros(MARIADB_PID!) - databaseBefore;
  const ticks = machineTicks();
  const batchesAfter = await groupCommitBatches([url]);
  const commits = batchesAfter.count - batchesBefore.count;
  const statuses = (result.statusCodeStats ?? {}) as Record<string, { count: number }>;
  const count = (code: string) => statuses[code]?.count ?? 0;
  const created = count('201');
  const refused = count('409');
  const answered = Object.values(statuses).reduce((total, s) => total + s.count, 0);
  const errors = answered - created - refused + result.errors + result.timeouts;
  const errorSamples = Object.keys(statuses)
    .filter((code) => code !== '201' && code !== '409')
    .map((code) => `${code} x ${count(code)}`);
  const perOrder = (micros: number) => (created > 0 ? Math.round(micros / created) : 0);
  return {
    ordersPerSecond: Math.round(created / (DURATION_MS / 1000)),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: answered,
    refused,
    errors,
    errorSamples,
    serverCpuUsPerOrder: perOrder(cpu),
    generatorCpuUsPerOrder: perOrder(generator.user + generator.system),
    databaseCpuUsPerOrder: database === null ? null : perOrder(database),
    machineBusyPercent: Math.round(
      (100 * (ticks.total - ticks.idle - (ticksBefore.total - ticksBefore.idle))) /
        Math.max(1, ticks.total - ticksBefore.total),
    ),
    // actor mode only: requests per group-commit transaction over the measured window
    ordersPerCommit:
      commits > 0 ? Number(((batchesAfter.sum - batchesBefore.sum) / commits).toFixed(1)) : null,
    serverPeakRssMb: peakRssMb(server.pid),
  };
}

type SellOutRun = { round: number; mode: Mode } & SellOut;

async function runOne(
  round: number,
  mode: Mode,
): Promise<{ results: RunResult[]; sellOut: SellOutRun | null }> {
  const name = `mkt_bench_${process.pid}_${round}_${mode}`;
  let target: Target;
  if (DB === 'mysql') {
    await withAdmin(MYSQL, (admin) =>
      admin.raw(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`),
    );
    target = { client: 'mysql', url: `${MYSQL}/${name}` };
  } else {
    target = { client: 'sqlite', dataDir: fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`)) };
  }
  const { child, port } = await startServer(target, mode);
  const server = { port, pid: child.pid! };
  const db = knexFactory(
    knexConfig(
      target.client === 'mysql'
        ? { client: 'mysql', url: target.url, poolMax: 4 }
        : { client: 'sqlite', filename: path.join(target.dataDir, 'marketplace.sqlite') },
    ),
  );
  const results: RunResult[] = [];
  let sold: SellOutRun | null = null;
  try {
    const fixture = await seedOrderWorld(db, {
      buyers: CONCURRENCY,
      spreadProducts: SPREAD_PRODUCTS,
      signer: signerFor(target),
    });
    for (const scenario of SCENARIOS) {
      process.stdout.write(`round ${round} ${mode} ${scenario} ... `);
      const measured = await load(server, fixture, scenario);
      // One snapshot (InnoDB REPEATABLE READ; a SQLite read transaction): orders still in flight when the
      // generator stopped may commit meanwhile, and separate reads could see an order's items without its deduction.
      const stock = await db.transaction((trx) => checkBooks(trx, fixture.initial), {
        ...(target.client === 'mysql' && { isolationLevel: 'repeatable read' as const }),
      });
      results.push({ round, mode, scenario, ...measured, ...stock });
      process.stdout.write(
        `${measured.ordersPerSecond} orders/s, p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms, server CPU ${measured.serverCpuUsPerOrder} us/order (generator ${measured.generatorCpuUsPerOrder}${measured.databaseCpuUsPerOrder === null ? '' : `, MariaDB ${measured.databaseCpuUsPerOrder}`}, machine ${measured.machineBusyPercent}% busy), ${measured.ordersPerCommit ?? '-'} orders/commit, peak RSS ${measured.serverPeakRssMb} MB, refused ${measured.refused}, errors ${measured.errors}, oversell ${stock.oversell ? 'YES' : 'no'}, conserved ${stock.conserved ? 'yes' : 'NO'}\n`,
      );
    }
    if (SELL_OUT_STOCK > 0) {
      process.stdout.write(`round ${round} ${mode} sell-out of ${SELL_OUT_STOCK} ... `);
      const s = await sellOut({
        urls: [`http://127.0.0.1:${port}`],
        db,
        world: fixture,
        stock: SELL_OUT_STOCK,
        connections: CONCURRENCY,
        maxSeconds: SELL_OUT_MAX_S,
        repeatableRead: target.client === 'mysql',
      });
      sold = { round, mode, ...s };
      process.stdout.write(
        `${s.sold} sold (201s ${s.accepted}, 409s ${s.refused}, other ${s.errors}) in ${s.seconds} s, final stock ${s.finalStock}, products below 0: ${s.negativeStock}, ${s.ok ? 'exactly N sold' : 'NOT exactly N sold'}\n`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await db.destroy();
    if (target.client === 'mysql')
      await withAdmin(MYSQL, (admin) => admin.raw(`DROP DATABASE IF EXISTS \`${name}\``));
    else fs.rmSync(target.dataDir, { recursive: true, force: true });
  }
  return { results, sellOut: sold };
}

/**
 * `rounds`: the ratio of each round on its own (the modes alternate within a round) and `roundsMet` how many of
 * them meet the target, for how near the edge a median is.
 */
type Ratios = Record<
  string,
  { value: number; target: string; met: boolean; rounds?: number[]; roundsMet?: number }
>;

/** actor / transactional orders/s per scenario, each with the issue's target, and the oversell check. */
const TARGETS: Record<Scenario, number> = { hot: 10, spread: 4, cart: 3 };

function ratiosOf(results: RunResult[], sellOuts: SellOutRun[]): Ratios {
  const ratios: Ratios = {};
  for (const scenario of SCENARIOS) {
    const rps = (mode: Mode) =>
      median(results.filter((r) => r.scenario === scenario && r.mode === mode).map((r) => r.ordersPerSecond));
    const runs = (mode: Mode) => results.filter((r) => r.scenario === scenario && r.mode === mode).length;
    if (runs('actor') === 0 || runs('transactional') === 0 || rps('transactional') <= 0) continue;
    const value = Number((rps('actor') / rps('transactional')).toFixed(2));
    const rounds = [...new Set(results.map((r) => r.round))].flatMap((round) => {
      const of = (mode: Mode) =>
        results.find((r) => r.round === round && r.scenario === scenario && r.mode === mode);
      const actor = of('actor');
      const transactional = of('transactional');
      return actor && transactional && transactional.ordersPerSecond > 0
        ? [Number((actor.ordersPerSecond / transactional.ordersPerSecond).toFixed(2))]
        : [];
    });
    ratios[`${scenario}: actor / transactional orders/s`] = {
      value,
      target: `>= ${TARGETS[scenario]}x`,
      met: value >= TARGETS[scenario],
      rounds,
      roundsMet: rounds.filter((ratio) => ratio >= TARGETS[scenario]).length,
    };
  }
  // Issue 13: the service's CPU per order in actor mode, ~1 ms before the issue, target <= 0.4 ms.
  for (const scenario of SCENARIOS) {
    const cpu = results
      .filter((r) => r.scenario === scenario && r.mode === 'actor')
      .map((r) => r.serverCpuUsPerOrder);
    if (cpu.length === 0) continue;
    const value = Math.round(median(cpu));
    ratios[`${scenario}: server CPU per order, actor (us)`] = { value, target: '<= 400', met: value <= 400 };
  }
  const oversold = results.filter((r) => r.oversell || !r.conserved).length;
  ratios['runs with oversell or unconserved stock'] = { value: oversold, target: '0', met: oversold === 0 };
  if (sellOuts.length > 0) {
    const wrong = sellOuts.filter((s) => !s.ok).length;
    ratios[`sell-out phases without exactly ${SELL_OUT_STOCK} sold, stock 0, none below 0`] = {
      value: wrong,
      target: '0',
      met: wrong === 0,
    };
  }
  return ratios;
}

function table(results: RunResult[], sellOuts: SellOutRun[], ratios: Ratios): string {
  const lines = [
    `| scenario | mode | orders/s (median) | p50 ms | p99 ms | server CPU us/order | generator us/order | MariaDB us/order | machine busy % | refused | errors | oversell | runs |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|---|`,
  ];
  for (const scenario of SCENARIOS) {
    for (const mode of MODES) {
      const runs = results.filter((r) => r.scenario === scenario && r.mode === mode);
      if (runs.length === 0) continue;
      const sum = (pick: (r: RunResult) => number) => runs.reduce((total, r) => total + pick(r), 0);
      lines.push(
        `| ${scenario} | ${mode} | ${Math.round(median(runs.map((r) => r.ordersPerSecond)))} | ${median(runs.map((r) => r.p50Ms))} | ${median(runs.map((r) => r.p99Ms))} | ${Math.round(median(runs.map((r) => r.serverCpuUsPerOrder)))} | ${Math.round(median(runs.map((r) => r.generatorCpuUsPerOrder)))} | ${runs[0].databaseCpuUsPerOrder === null ? '-' : Math.round(median(runs.map((r) => r.databaseCpuUsPerOrder ?? 0)))} | ${Math.round(median(runs.map((r) => r.machineBusyPercent)))} | ${sum((r) => r.refused)} | ${sum((r) => r.errors)} | ${
          runs.some((r) => r.oversell || !r.conserved) ? '**YES**' : 'none'
        } | ${runs.length} |`,
      );
    }
  }
  if (sellOuts.length > 0) {
    lines.push('', ...SELL_OUT_HEADER);
    for (const s of sellOuts) lines.push(sellOutLine(`round ${s.round} ${s.mode}`, s));
  }
  lines.push('', '| ratio | value | target | met | each round |', '|---|---|---|---|---|');
  for (const [name, r] of Object.entries(ratios)) {
    const x = name.includes('/ transactional') ? 'x' : '';
    const rounds = r.rounds?.length
      ? `${r.rounds.map((value) => `${value}${x}`).join(', ')} (${r.roundsMet} of ${r.rounds.length} met)`
      : '';
    lines.push(`| ${name} | ${r.value}${x} | ${r.target} | ${r.met ? 'yes' : '**no**'} | ${rounds} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const runInfo = startRunInfo();
  console.log(
    `bench:orders (${DB}) — ${CONCURRENCY} concurrent buyers, ${DURATION_MS} ms measured after ${WARMUP_MS} ms warm-up, ${ROUNDS} round(s), modes ${MODES.join(
      '/',
    )}, scenarios ${SCENARIOS.join('/')}; ${os.cpus().length} CPUs, Node ${process.version}`,
  );
  const results: RunResult[] = [];
  const sellOuts: SellOutRun[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of MODES) {
      const run = await runOne(round, mode);
      results.push(...run.results);
      if (run.sellOut) sellOuts.push(run.sellOut);
    }
  }
  const ratios = ratiosOf(results, sellOuts);
  const markdown = table(results, sellOuts, ratios);
  const dir = path.join(root, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `orders-${DB}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify(
      {
        when: new Date().toISOString(),
        settings: {
          db: DB,
          dbTimeoutMs: Number(DB_TIMEOUT_MS),
          concurrency: CONCURRENCY,
          durationMs: DURATION_MS,
          warmupMs: WARMUP_MS,
          rounds: ROUNDS,
          dbPoolMax: Number(POOL_MAX),
          serverNodeArgs: SERVER_NODE_ARGS,
          sellOutStock: SELL_OUT_STOCK,
          sellOutMaxSeconds: SELL_OUT_MAX_S,
        },
        run: runInfo.finish(),
        ratios,
        results,
        sellOut: sellOuts,
        markdown,
      },
      null,
      2,
    ),
  );
  console.log(`\n${markdown}\n\nresults: ${path.relative(root, file)}`);
  if (results.some((r) => r.oversell || !r.conserved) || sellOuts.some((s) => !s.ok)) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
