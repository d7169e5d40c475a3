// `npm run bench:actor-memory [-- <registry module>]` (node --expose-gc): the memory of the product stock
// actors. Touches N products' actors (one reservation committed each, as an order would), then waits for
// them to passivate (ACTOR_IDLE_MS, short here) and reports RSS and heap after a full GC at each step:
// baseline, all N active, all passivated. The loader answers from memory so that only the actors are
// measured (no database driver buffers). Env: BENCH_ACTORS [100000], ACTOR_IDLE_MS [500].
// The optional argument is another copy of actors/registry.ts, to compare a former machine in one run.
// Writes bench/results/actor-memory-<timestamp>.json (`run`: commit and machine; samples, and under `ratios` the heap after
// passivation still held over the heap the active actors took, target <= 0.01: back to baseline).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createLogger } from '../lib/logger';
import { startRunInfo } from './lib/run-info';
import type { createStockRegistry as CreateRegistry } from '../actors/registry';

const N = Number(process.env.BENCH_ACTORS ?? 100_000);
const IDLE_MS = Number(process.env.ACTOR_IDLE_MS ?? 500);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('Run with node --expose-gc');

const MB = (bytes: number) => Math.round(bytes / 1024 / 1024);
function sample(label: string) {
  gc!();
  gc!();
  const { rss, heapUsed } = process.memoryUsage();
  return { label, rssMb: MB(rss), heapUsedMb: MB(heapUsed), heapUsedBytes: heapUsed };
}

async function main(): Promise<void> {
  const runInfo = startRunInfo();
  const modulePath = process.argv[2] ? path.resolve(process.argv[2]) : '../actors/registry';
  const { createStockRegistry } = (await import(
    modulePath.startsWith('/') ? pathToFileURL(modulePath).href : modulePath
  )) as { createStockRegistry: typeof CreateRegistry };
  const registry = createStockRegistry({
    load: async (productId) => ({
      id: productId,
      sellerId: 1,
      name: `Product ${productId}`,
      priceCents: 999,
      status: 'ON_SALE',
      stock: 1_000,
      catalogVersion: 1,
    }),
    logger: createLogger({ level: 'warn', format: 'json' }),
    idleMs: IDLE_MS,
  });
  const samples = [sample('baseline')];
  const started = performance.now();
  for (let from = 1; from <= N; from += 1000) {
    await Promise.all(
      Array.from({ length: Math.min(1000, N + 1 - from) }, async (_, k) => {
        const result = await registry.reserve(from + k, 1);
        if (!result.ok) throw new Error(`refused: ${result.reason}`);
        registry.committed(result.reservation);
      }),
    );
  }
  const touchMs = Math.round(performance.now() - started);
  samples.push({ ...sample(`${registry.activeCount()} actors active`) });
  const deadline = Date.now() + 60_000;
  while (registry.activeCount() > 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  samples.push(sample(`after passivation (${registry.activeCount()} active)`));
  registry.stop();
  // What the actors took on the heap, and the part of it still held after they passivated.
  const [baseline, active, passivated] = samples.map((entry) => entry.heapUsedBytes);
  const retained = (passivated - baseline) / Math.max(1, active - baseline);
  const ratios = {
    'heap still held after passivation / heap the active actors took': {
      value: Number(retained.toFixed(4)),
      target: '<= 0.01',
      met: retained <= 0.01 && registry.activeCount() === 0,
    },
  };
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const file = path.join(
    root,
    'bench',
    'results',
    `actor-memory-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  const report = {
    benchmark: 'actor-memory',
    at: new Date().toISOString(),
    options: { actors: N, idleMs: IDLE_MS, module: process.argv[2] ?? 'actors/registry.ts' },
    run: runInfo.finish(),
    touchMs,
    samples,
    ratios,
  };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(JSON.stringify(report, null, 2));
  console.log(`results: ${path.relative(root, file)}`);
  if (!Object.values(ratios).every((ratio) => ratio.met)) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
