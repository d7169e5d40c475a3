// `npm run bench:order-writes [-- --label name]`: what writing one group-commit batch costs on MariaDB, without
// HTTP, actors or the load generator around it: BEGIN, the guarded stock UPDATE, the orders' INSERTs (orders,
// items, history, outbox) and COMMIT, run back to back in this process. Per batch: this process's CPU (the
// service's side of the writes: query building, the driver, its socket writes), MariaDB's CPU and the wall
// time. Isolates the cost of the statements a batch sends (the orders benchmark measures the whole path,
// whose noise hides a change of a few percent here).
//
// Environment (defaults in brackets): BENCH_MYSQL_URL [mysql://root@127.0.0.1:3306], BENCH_BATCH [32] orders
// per batch, BENCH_BATCHES [600] measured batches (after BENCH_WARMUP_BATCHES [100]).
// Results: bench/results/order-writes[-<label>]-<timestamp>.json.
import fs from 'node:fs';
import path from 'node:path';
import { createDb } from '../lib/db';
import { migrateLatest } from '../lib/migration-mark';
import { deductStockBatch } from '../lib/inventory/stock-repository';
import { insertPlacements, type Placement } from '../lib/orders/order-repository';
import { median } from './lib/books';
import { ensureMysqlDatabase } from './lib/catalog-fill';
import { cpuMicros, pidOf } from './lib/metrics';
import { address, seedOrderWorld } from './lib/order-world';
import { ROOT } from './lib/processes';
import { startRunInfo } from './lib/run-info';

const runInfo = startRunInfo();
const { env } = process;
const MYSQL = (env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
const BATCH = Number(env.BENCH_BATCH ?? 32);
const BATCHES = Number(env.BENCH_BATCHES ?? 600);
const WARMUP = Number(env.BENCH_WARMUP_BATCHES ?? 100);
const at = process.argv.indexOf('--label');
const LABEL = at > 0 ? process.argv[at + 1] : '';
const MARIADB_PID = pidOf('mariadbd') ?? pidOf('mysqld');

const url = `${MYSQL}/bench_order_writes`;
await ensureMysqlDatabase(url, true);
const db = createDb({ client: 'mysql', url, poolMax: 2 });
try {
  await migrateLatest(db);
  const world = await seedOrderWorld(db, {
    buyers: 1,
    spreadProducts: 0,
    signer: { signAccessToken: () => '' },
  });
  const row = await db('products').where('id', world.hot).first('seller_id', 'name', 'catalog_version');
  const buyer = await db('members').where('role', 'BUYER').first('id');
  const product = {
    id: world.hot,
    sellerId: Number(row.seller_id),
    name: String(row.name),
    priceCents: 999,
    status: 'ON_SALE' as const,
    stock: Number.MAX_SAFE_INTEGER,
    catalogVersion: Number(row.catalog_version),
  };
  const placements: Placement[] = Array.from({ length: BATCH }, (_, i) => ({
    buyerId: Number(buyer.id),
    address,
    lines: [{ product, quantity: 1 }],
    requestId: `bench-${i}`,
  }));
  const writeBatch = () =>
    db.transaction(async (trx) => {
      const now = new Date();
      const applied = await deductStockBatch(
        trx,
        [{ productId: product.id, quantity: BATCH, catalogVersion: product.catalogVersion }],
        now,
      );
      if (!applied) throw new Error('the guard refused');
      await insertPlacements(trx, placements, now);
    });

  for (let i = 0; i < WARMUP; i++) await writeBatch();
  const own: number[] = [];
  const database: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < BATCHES; i++) {
    const cpu = process.cpuUsage();
    const dbCpu = MARIADB_PID ? cpuMicros(MARIADB_PID) : 0;
    const started = performance.now();
    await writeBatch();
    wall.push((performance.now() - started) * 1000);
    const used = process.cpuUsage(cpu);
    own.push(used.user + used.system);
    if (MARIADB_PID) database.push(cpuMicros(MARIADB_PID) - dbCpu);
  }
  // /proc's CPU counts move in 10 ms ticks: per batch only their sum means something.
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const result = {
    when: new Date().toISOString(),
    label: LABEL || null,
    settings: { batch: BATCH, batches: BATCHES, warmupBatches: WARMUP },
    run: runInfo.finish(),
    serviceCpuUsPerBatch: Math.round(sum(own) / BATCHES),
    databaseCpuUsPerBatch: MARIADB_PID ? Math.round(sum(database) / BATCHES) : null,
    wallUsPerBatchMedian: Math.round(median(wall)),
    serviceCpuUsPerOrder: Math.round(sum(own) / BATCHES / BATCH),
  };
  console.log(JSON.stringify(result));
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const stamp = result.when.replace(/[:.]/g, '-');
  fs.writeFileSync(
    path.join(dir, `order-writes${LABEL ? `-${LABEL}` : ''}-${stamp}.json`),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  await db.destroy();
}
