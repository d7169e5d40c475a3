// `npm test`: the whole ava suite on the embedded SQLite database, then on MariaDB/MySQL
// (TEST_MYSQL_URL, default mysql://root@127.0.0.1:3306). Fails if either run fails or MySQL is unreachable.
import { spawn } from 'node:child_process';

const extraArgs = process.argv.slice(2);
const totals = { passed: 0, failed: 0 };

function runAva(db: 'sqlite' | 'mysql'): Promise<number> {
  process.stdout.write(`\n=== ava on ${db} ===\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['node_modules/ava/entrypoints/cli.mjs', ...extraArgs], {
      env: { ...process.env, TEST_DB: db },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      out += chunk.toString();
    });
    child.on('close', (code) => {
      // eslint-disable-next-line no-control-regex -- strips ANSI colour codes
      const clean = out.replace(/\x1b\[[0-9;]*m/g, '');
      const passed = /(\d+) tests? passed/.exec(clean);
      const failed = /(\d+) tests? failed/.exec(clean);
      const known = /(\d+) known failure/.exec(clean);
      totals.passed += passed ? Number(passed[1]) : 0;
      totals.failed += (failed ? Number(failed[1]) : 0) + (known ? Number(known[1]) : 0);
      if (code !== 0 && !failed) totals.failed += 1; // a crash or an unreachable database counts as a failure
      resolve(code ?? 1);
    });
  });
}

const only = process.env.TEST_DB;
const codes: number[] = [];
for (const db of ['sqlite', 'mysql'] as const) {
  if (!only || only === db) codes.push(await runAva(db));
}
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed\n`);
process.exit(codes.some((c) => c !== 0) ? 1 : 0);
