// `node --expose-gc --import tsx bench/actor-memory.ts [registry module]`: the memory of the product stock
// actors. Touches N products' actors (one reservation committed each, as an order would), then waits for
// them to passivate (ACTOR_IDLE_MS, short here) and reports RSS and heap after a full GC at each step:
// baseline, all N active, all passivated. The loader answers from memory so that only the actors are
// measured (no database driver buffers). Env: BENCH_ACTORS [100000], ACTOR_IDLE_MS [500].
// The optional argument is another copy of actors/registry.ts, to compare a former machine in one run.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../lib/logger';
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
  return { label, rssMb: MB(rss), heapUsedMb: MB(heapUsed) };
}

async function main(): Promise<void> {
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
  console.log(
    JSON.stringify(
      { actors: N, idleMs: IDLE_MS, touchMs, module: process.argv[2] ?? 'actors/registry.ts', samples },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
