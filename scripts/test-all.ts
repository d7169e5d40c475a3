// `npm test`: the whole ava suite on the embedded SQLite database, then on MariaDB/MySQL
// (TEST_MYSQL_URL, default mysql://root@127.0.0.1:3306). Fails if either run fails or MySQL is unreachable.
// The closing line counts every test of both runs from ava's TAP output (machine-readable, unlike its
// human reporter); a run that crashes without reporting a failure still counts as one failed.
// Each pass starts only the files it has work for (`filesFor`); `npm test -- <files>` runs the files named on both.
// Any argument not starting with '-' counts as a file, so an option's value (`--match x`) also runs every file on
// both passes: slower, never fewer tests.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const extraArgs = process.argv.slice(2);
const namedFiles = extraArgs.some((arg) => !arg.startsWith('-'));
const totals = { passed: 0, failed: 0, skipped: 0 };

/** The browser tests need Chromium: find it, or install Debian's when we may, or say what to install. */
function ensureChromium(): void {
  const wanted = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (fs.existsSync(wanted)) return;
  if (process.getuid?.() === 0 && fs.existsSync('/usr/bin/apt-get')) {
    process.stdout.write('Chromium is missing; installing Debian’s chromium for the browser tests\n');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env });
    if (fs.existsSync(wanted)) return;
  }
  process.stdout.write(
    `Browser tests need Chromium at ${wanted}: install it (as root: apt-get install -y chromium) or set CHROMIUM_PATH; they fail without it.\n`,
  );
}

/**
 * Folders whose every test needs MariaDB: the NATS cluster (its instances share one MySQL database) and the faults
 * injected through a TCP proxy in front of MariaDB. On the SQLite pass each of their files would start (2 s of a
 * core: tsx and the app's modules) only to skip. The exceptions are pure, or about SQLite, and run on both.
 */
const MARIADB_ONLY = /^test\/(cluster|faults)\//;
const ON_BOTH = new Set([
  'test/cluster/cluster-config.test.ts',
  'test/cluster/wire-errors.test.ts',
  'test/faults/sqlite-storage.test.ts',
]);
/** The browser tests drive Swagger UI and the lifecycle diagram, not the database: the SQLite pass runs them. */
const DATABASE_FREE = /^test\/browser\//;

/**
 * Workers per pass. The SQLite pass keeps ava's default (one per core): its files are busy on the CPU throughout. The
 * MariaDB pass's cluster and fault files spend much of their time waiting (lease TTLs, timeouts, a proxy's cuts):
 * measured with vmstat on 2 cores, the cores were 40-90% idle through them with two workers, so it runs three.
 */
const CONCURRENCY = { sqlite: [], mysql: ['--concurrency=3'] };

/** The test files (ava's `files` glob: test/**\/*.test.ts) a pass starts. */
function filesFor(db: 'sqlite' | 'mysql'): string[] {
  const all = (fs.readdirSync('test', { recursive: true }) as string[])
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => path.posix.join('test', file.split(path.sep).join('/')))
    .sort();
  if (db === 'sqlite') return all.filter((file) => !MARIADB_ONLY.test(file) || ON_BOTH.has(file));
  return all.filter((file) => !DATABASE_FREE.test(file));
}

/** Counts one TAP line: `ok N - title`, `not ok N - title`, with `# SKIP` / `# TODO` directives. */
function countTapLine(line: string, run: typeof totals): void {
  const match = /^(not ok|ok)\b.*?(?:#\s*(SKIP|TODO)\b.*)?$/i.exec(line);
  if (!match) return;
  if (match[2]) run.skipped++;
  else if (match[1] === 'ok') run.passed++;
  else run.failed++;
}

function runAva(db: 'sqlite' | 'mysql'): Promise<number> {
  process.stdout.write(`\n=== ava on ${db} ===\n`);
  return new Promise((resolve) => {
    const files = namedFiles ? [] : filesFor(db);
    const workers = extraArgs.some((arg) => /^(-c|--concurrency)\b/.test(arg)) ? [] : CONCURRENCY[db];
    const cli = ['node_modules/ava/entrypoints/cli.mjs', '--tap', ...workers, ...extraArgs, ...files];
    const child = spawn(process.execPath, cli, {
      env: { ...process.env, TEST_DB: db },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const run = { passed: 0, failed: 0, skipped: 0 };
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) countTapLine(line, run);
    });
    child.on('close', (code) => {
      countTapLine(pending, run);
      // A crash, a timeout or an unreachable database without a failing test line is still a failure.
      if (code !== 0 && run.failed === 0) run.failed = 1;
      process.stdout.write(`${db}: ${run.passed} passed, ${run.failed} failed, ${run.skipped} skipped\n`);
      totals.passed += run.passed;
      totals.failed += run.failed;
      totals.skipped += run.skipped;
      resolve(code ?? 1);
    });
  });
}

ensureChromium();
const only = process.env.TEST_DB;
const codes: number[] = [];
for (const db of ['sqlite', 'mysql'] as const) {
  if (!only || only === db) codes.push(await runAva(db));
}
const skipped = totals.skipped > 0 ? `, ${totals.skipped} skipped` : '';
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed${skipped}\n`);
process.exit(codes.some((c) => c !== 0) ? 1 : 0);
