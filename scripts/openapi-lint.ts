// `npm run lint:openapi`: builds the served OpenAPI document in-process from the route table (no server, no
// migrations), writes it to a temp file and lints it with Redocly's `recommended` ruleset. Fails on any error
// OR warning (redocly itself exits 0 on warnings).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../lib/app';
import { loadConfig } from '../lib/config';
import { createDb } from '../lib/db';
import { createLogger } from '../lib/logger';
import { buildServedDocument } from '../routes/docs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
const config = loadConfig({ NODE_ENV: 'test', DATA_DIR: dir, LOG_LEVEL: 'fatal', SEED_ON_START: 'false' });
const db = createDb(config.database);
const bundle = createApp({ config, db, logger: createLogger({ level: 'fatal', format: 'line' }) });
const file = path.join(dir, 'openapi.json');
fs.writeFileSync(file, JSON.stringify(buildServedDocument(bundle.routes), null, 2));
await bundle.services.stop();
await db.destroy();

const redocly = path.join(import.meta.dirname, '../node_modules/@redocly/cli/bin/cli.js');
const run = spawnSync(process.execPath, [redocly, 'lint', '--extends=recommended', '--format=json', file], {
  encoding: 'utf8',
  // No usage telemetry from a CI run.
  env: { ...process.env, REDOCLY_TELEMETRY: 'off' },
});
fs.rmSync(dir, { recursive: true, force: true });

interface Report {
  totals: { errors: number; warnings: number };
  problems: Array<{
    ruleId: string;
    severity: string;
    message: string;
    location: Array<{ pointer: string }>;
  }>;
}
let report: Report;
try {
  report = JSON.parse(run.stdout) as Report;
} catch {
  process.stdout.write(`${run.stdout}${run.stderr}\nOpenAPI lint: redocly did not produce a report\n`);
  process.exit(1);
}
for (const p of report.problems) {
  process.stdout.write(`${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}\n`);
}
const { errors, warnings } = report.totals;
process.stdout.write(`OpenAPI lint (Redocly recommended): ${errors} errors, ${warnings} warnings\n`);
process.exit(errors + warnings === 0 && run.status === 0 ? 0 : 1);
