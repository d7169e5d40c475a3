// `npm run bench:login-storm -- [--rounds 5] [--logins 50]`
//
// Issue 15's bound on bcrypt: while 50 logins run at once, serving an image stays fast (target: p99 < 100 ms).
// The real service runs as a child process (SQLite in a temp DATA_DIR, production bcrypt cost 12, the default
// BCRYPT_CONCURRENCY); this process uploads a PNG as the demo seller, then alternates, round by round, a quiet
// phase (image GETs alone) and a storm phase (the same image GETs while `--logins` wrong-password logins run in
// parallel), one GET at a time, timed from here. Results: bench/results/login-storm-<timestamp>.json with the
// machine, every round's p50/p99 and `ratios` as { value, target, met } over the median of the rounds' p99s.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startChild, startScriptFlags } from './lib/processes';
import { startRunInfo } from './lib/run-info';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const value = index === -1 ? fallback : Number(process.argv[index + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} takes a whole number`);
  return value;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};
const median = (values: number[]) => percentile(values, 50);
const round1 = (value: number) => Math.round(value * 10) / 10;

async function timedGet(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  const runInfo = startRunInfo();
  const rounds = option('rounds', 5);
  const logins = option('logins', 50);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-login-storm-'));
  const service = await startChild(
    'lib/server.ts',
    {
      DATA_DIR: dataDir,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      BCRYPT_COST: '12',
      SEED_ON_START: 'true',
      // Every storm comes from this one address: its per-address login limit would answer 429 without hashing.
      LOGIN_ADDRESS_LIMIT: 'off',
    },
    '/health/ready',
    startScriptFlags(),
  );
  try {
    const login = await fetch(`${service.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'seller@marketplace.test', password: 'Seller123!' }),
    });
    const { accessToken } = (await login.json()) as { accessToken: string };
    const form = new FormData();
    form.append('images', new Blob([PNG], { type: 'image/png' }), 'dot.png');
    const upload = await fetch(`${service.url}/api/v1/products/1/images`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${accessToken}` },
      body: form,
    });
    if (upload.status !== 201) throw new Error(`upload: ${upload.status} ${await upload.text()}`);
    const { images } = (await upload.json()) as { images: Array<{ imageUrl: string }> };
    const imageUrl = service.url + images[images.length - 1].imageUrl;

    const storm = () =>
      Promise.all(
        Array.from({ length: logins }, (_, i) =>
          fetch(`${service.url}/api/v1/auth/login`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({
              email: `nobody-${i}-${Date.now()}@example.test`,
              password: 'Wrong-password-1',
            }),
          }).then(async (res) => {
            await res.arrayBuffer();
            return res.status;
          }),
        ),
      );

    const results: Array<{
      round: number;
      quiet: { samples: number; p50: number; p99: number };
      storm: { samples: number; p50: number; p99: number; loginStatuses: Record<string, number>; ms: number };
      loadavg: number[];
    }> = [];
    for (let round = 1; round <= rounds; round++) {
      const quiet: number[] = [];
      for (let i = 0; i < 60; i++) quiet.push(await timedGet(imageUrl));
      const during: number[] = [];
      const started = performance.now();
      let done = false;
      const burst = storm().finally(() => (done = true));
      while (!done || during.length < 20) during.push(await timedGet(imageUrl));
      const statuses = await burst;
      const ms = performance.now() - started;
      const loginStatuses: Record<string, number> = {};
      for (const status of statuses) loginStatuses[status] = (loginStatuses[status] ?? 0) + 1;
      results.push({
        round,
        quiet: { samples: quiet.length, p50: round1(median(quiet)), p99: round1(percentile(quiet, 99)) },
        storm: {
          samples: during.length,
          p50: round1(median(during)),
          p99: round1(percentile(during, 99)),
          loginStatuses,
          ms: Math.round(ms),
        },
        loadavg: os.loadavg().map(round1),
      });
      const last = results[results.length - 1];
      console.log(
        `round ${round}: quiet p99 ${last.quiet.p99} ms; during ${logins} logins (${last.storm.ms} ms, ${JSON.stringify(
          loginStatuses,
        )}) image p50 ${last.storm.p50} ms, p99 ${last.storm.p99} ms over ${during.length} GETs; load ${last.loadavg.join(' ')}`,
      );
    }
    const stormP99 = median(results.map((r) => r.storm.p99));
    const ratios = {
      'image GET p99 during the login storm (median of rounds), ms': {
        value: stormP99,
        target: '< 100',
        met: stormP99 < 100,
      },
    };
    const out = path.join(
      ROOT,
      'bench',
      'results',
      `login-storm-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    fs.writeFileSync(
      out,
      `${JSON.stringify(
        {
          settings: { rounds, logins, bcryptCost: 12, database: 'sqlite' },
          run: runInfo.finish(),
          rounds: results,
          ratios,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`\n| ratio | value | target | met |\n| --- | ---: | --- | --- |`);
    for (const [name, r] of Object.entries(ratios))
      console.log(`| ${name} | ${r.value} | ${r.target} | ${r.met} |`);
    console.log(`\n${path.relative(ROOT, out)}`);
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
