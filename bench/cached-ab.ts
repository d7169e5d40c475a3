// `node --import tsx bench/cached-ab.ts --before <checkout or commit> [--data-dir <sqlite DATA_DIR>] [--rounds 3]
//   [--duration 4] [--connections 32] [paths...]`
// Before/after of the cached GETs in one run: the service of another checkout (`--before <dir>`) or of a commit
// of this repository (`--before 4838ff3`: `git archive`d into a temp dir with this node_modules linked) and
// this one, both on copies of the same
// SQLite database, and the bare Koa baseline, measured alternately (hello, before, after, hello, ...) so drift
// hits all three. Besides req/s it records each server's CPU time per request (utime + stime from /proc, so
// Linux only): on a shared machine the rate follows the load, the CPU a request costs much less so.
// Writes bench/results/cached-ab-<timestamp>.json.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { freePort, ROOT } from './lib/processes';
import { startRunInfo } from './lib/run-info';

interface Options {
  before: string;
  dataDir: string;
  rounds: number;
  duration: number;
  connections: number;
  paths: string[];
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    before: '',
    dataDir: path.join(os.tmpdir(), 'mkt-bench-catalog-sqlite'),
    rounds: 3,
    duration: 4,
    connections: 32,
    paths: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--before') o.before = value();
    else if (flag === '--data-dir') o.dataDir = path.resolve(value());
    else if (['--rounds', '--duration', '--connections'].includes(flag)) {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a whole number`);
      o[flag.slice(2) as 'rounds' | 'duration' | 'connections'] = n;
    } else if (flag.startsWith('--')) throw new Error(`Unknown argument ${argv[i]}`);
    else o.paths.push(argv[i]);
  }
  if (!o.before) throw new Error('--before <checkout> is required');
  if (o.paths.length === 0)
    o.paths = ['/api/v1/categories', '/api/v1/products/popular', '/api/v1/products/5'];
  return o;
}

/** `--before` as a directory to run: a checkout as given, or a commit extracted into `into`. */
function beforeCheckout(before: string, into: string): { dir: string; commit: string | null } {
  if (fs.existsSync(path.join(before, 'lib', 'server.ts')))
    return { dir: path.resolve(before), commit: null };
  const commit = execFileSync('git', ['rev-parse', '--verify', `${before}^{commit}`], { cwd: ROOT })
    .toString()
    .trim();
  const dir = path.join(into, 'before-checkout');
  fs.mkdirSync(dir);
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C "${dir}"`], { cwd: ROOT });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return { dir, commit };
}

interface Server {
  process: ChildProcess;
  url: string;
}

async function start(cwd: string, script: string, env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 240; i++) {
    try {
      if ((await fetch(url + (script.includes('hello') ? '/' : '/health/ready'))).ok)
        return { process: child, url };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${cwd}/${script} did not start`);
}

/** CPU milliseconds (user + system) the process has used so far. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

async function measure(server: Server, urlPath: string, o: Options, seconds = o.duration) {
  const before = cpuMs(server.process.pid!);
  const r = await autocannon({ url: server.url + urlPath, connections: o.connections, duration: seconds });
  const cpu = cpuMs(server.process.pid!) - before;
  return {
    requestsPerSecond: Math.round(r.requests.average),
    cpuMicrosPerRequest: Math.round((cpu * 1000) / Math.max(r.requests.total, 1)),
    p50Ms: r.latency.p50,
    bad: r.non2xx + r.errors + r.timeouts,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const runInfo = startRunInfo();
  const copies = fs.mkdtempSync(path.join(os.tmpdir(), 'mkt-cached-ab-'));
  const before = beforeCheckout(o.before, copies);
  const env = (name: string) => {
    const dataDir = path.join(copies, name);
    fs.cpSync(o.dataDir, dataDir, { recursive: true });
    return {
      NODE_ENV: 'production',
      JWT_SECRET: 'cached-ab-'.padEnd(48, 'x'),
      SEED_ON_START: 'false',
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
    };
  };
  const servers: Record<'hello' | 'before' | 'after', Server> = {
    hello: await start(ROOT, 'bench/lib/hello-koa.ts', {}),
    before: await start(before.dir, 'lib/server.ts', env('before')),
    after: await start(ROOT, 'lib/server.ts', env('after')),
  };
  const rows: Array<Record<string, unknown>> = [];
  try {
    for (const urlPath of o.paths) {
      await measure(servers.before, urlPath, o, 1); // warm both
      await measure(servers.after, urlPath, o, 1);
      for (let round = 0; round < o.rounds; round++) {
        const row = {
          path: urlPath,
          round,
          hello: await measure(servers.hello, '/', o),
          before: await measure(servers.before, urlPath, o),
          after: await measure(servers.after, urlPath, o),
        };
        rows.push(row);
        process.stderr.write(`${JSON.stringify(row)}\n`);
      }
    }
  } finally {
    for (const server of Object.values(servers)) server.process.kill('SIGTERM');
    fs.rmSync(copies, { recursive: true, force: true });
  }
  type M = Awaited<ReturnType<typeof measure>>;
  const summary = o.paths.map((urlPath) => {
    const of = (who: 'hello' | 'before' | 'after', key: keyof M) =>
      median(rows.filter((r) => r.path === urlPath).map((r) => Number((r[who] as M)[key])));
    return {
      path: urlPath,
      medianRequestsPerSecond: {
        hello: of('hello', 'requestsPerSecond'),
        before: of('before', 'requestsPerSecond'),
        after: of('after', 'requestsPerSecond'),
      },
      medianCpuMicrosPerRequest: {
        hello: of('hello', 'cpuMicrosPerRequest'),
        before: of('before', 'cpuMicrosPerRequest'),
        after: of('after', 'cpuMicrosPerRequest'),
      },
      nonOk: rows
        .filter((r) => r.path === urlPath)
        .reduce((n, r) => n + (r.before as M).bad + (r.after as M).bad, 0),
    };
  });
  const lines = [
    '| path | bare Koa req/s | before req/s | after req/s | bare Koa CPU us/req | before CPU us/req | after CPU us/req |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...summary.map(
      (s) =>
        `| ${s.path} | ${s.medianRequestsPerSecond.hello} | ${s.medianRequestsPerSecond.before} | ${s.medianRequestsPerSecond.after} | ${s.medianCpuMicrosPerRequest.hello} | ${s.medianCpuMicrosPerRequest.before} | ${s.medianCpuMicrosPerRequest.after} |`,
    ),
  ];
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = path.join(ROOT, 'bench', 'results', `cached-ab-${stamp}.json`);
  fs.writeFileSync(
    file,
    `${JSON.stringify({ benchmark: 'cached-ab', at: new Date().toISOString(), options: o, beforeCommit: before.commit, run: runInfo.finish(), summary, rows }, null, 2)}\n`,
  );
  console.log(lines.join('\n'));
  console.log(`\nWritten ${path.relative(ROOT, file)}`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exitCode = 1;
});
