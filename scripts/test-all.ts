// `npm test`: the whole ava suite on the embedded SQLite database, then on MariaDB/MySQL
// (TEST_MYSQL_URL, default mysql://root@127.0.0.1:3306). Fails if either run fails or MySQL is unreachable.
// The closing line counts every test of both runs from ava's TAP output (machine-readable, unlike its
// human reporter); a run that crashes without reporting a failure still counts as one failed.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';

const extraArgs = process.argv.slice(2);
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
    const child = spawn(process.execPath, ['node_modules/ava/entrypoints/cli.mjs', '--tap', ...extraArgs], {
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
