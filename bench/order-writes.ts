// `npm run bench:order-writes [-- --db mysql|sqlite] [-- --label name]`: what writing one group-commit batch
// costs on MariaDB (or the embedded SQLite, a fresh file per run), without HTTP, actors or the load generator
// around it: BEGIN, the guarded stock UPDATE, the orders' INSERTs (orders, items, history, outbox) and COMMIT,
// run back to back in this process. Per batch: this process's CPU (the service's side of the writes: query
// building, the driver, its socket writes; on SQLite also the database's own work, which runs in the service's
// process), MariaDB's CPU and the wall time. Isolates the cost of the statements a batch sends (the orders
// benchmark measures the whole path, whose noise hides a change of a few percent here).
//
// Environment (defaults in brackets): BENCH_MYSQL_URL [mysql://root@127.0.0.1:3306], BENCH_BATCH [32] orders
// per batch, BENCH_BATCHES [600] measured batches (after BENCH_WARMUP_BATCHES [100]), BENCH_PRODUCTS [1] products
// the orders take turns on (1: every order the hot product; 1000: the orders benchmark's spread), BENCH_LINES [1]
// lines per order (distinct products; 3 with 1000 products: its carts).
// Results: bench/results/order-writes[-<db>][-<label>]-<timestamp>.json (`-sqlite` only on SQLite).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../lib/db';
import { migrateLatest } from '../lib/migration-mark';
import { deductStockBatch } from '../lib/inventory/stock-repository';
import { judgedTotals, type ProductView } from '../actors/stock-rules';
import { dbFlag } from './lib/db-flag';
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
const PRODUCTS = Number(env.BENCH_PRODUCTS ?? 1);
const LINES = Number(env.BENCH_LINES ?? 1);
const at = process.argv.indexOf('--label');
const LABEL = at > 0 ? process.argv[at + 1] : '';
const DB = dbFlag();
if (LINES > PRODUCTS) throw new Error('BENCH_LINES must not exceed BENCH_PRODUCTS');
const MARIADB_PID = DB === 'mysql' ? (pidOf('mariadbd') ?? pidOf('mysqld')) : null;

let db: ReturnType<typeof createDb>;
let sqliteDir: string | null = null;
if (DB === 'mysql') {
  const url = `${MYSQL}/bench_order_writes`;
  await ensureMysqlDatabase(url, true);
  db = createDb({ client: 'mysql', url, poolMax: 2 });
} else {
  sqliteDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-order-writes-'));
  db = createDb({ client: 'sqlite', filename: path.join(sqliteDir, 'marketplace.sqlite') });
}
try {
  await migrateLatest(db);
  const world = await seedOrderWorld(db, {
    buyers: 1,
    spreadProducts: PRODUCTS - 1,
    signer: { signAccessToken: () => '' },
  });
  const rows = (await db('products')
    .whereIn('id', [world.hot, ...world.spread])
    .orderBy('id')
    .select('id', 'seller_id', 'name', 'catalog_version')) as Array<Record<string, unknown>>;
  const products: ProductView[] = rows.map((row) => ({
    id: Number(row.id),
    sellerId: Number(row.seller_id),
    name: String(row.name),
    priceCents: 999,
    status: 'ON_SALE',
    stock: Number.MAX_SAFE_INTEGER,
    catalogVersion: Number(row.catalog_version),
  }));
  const buyer = await db('members').where('role', 'BUYER').first('id');
  // Each batch's orders take the next products in turn, so a spread batch names new products each time.
  let turn = 0;
  const nextBatch = () => {
    const placements: Placement[] = Array.from({ length: BATCH }, (_, i) => ({
      buyerId: Number(buyer.id),
      address,
      lines: Array.from({ length: LINES }, () => ({ product: products[turn++ % PRODUCTS], quantity: 1 })),
      requestId: `bench-${i}`,
    }));
    // Summed per product as the group commit does.
    const judged = judgedTotals(
      placements.flatMap(({ lines }) =>
        lines.map(({ product, quantity }) => ({
          productId: product.id,
          quantity,
          catalogVersion: product.catalogVersion,
        })),
      ),
    );
    if (!judged.ok) throw new Error('one product judged on two versions');
    return { placements, changes: judged.changes };
  };
  // The batch is built before its measurement starts: only its writes are measured.
  const writeBatch = ({ placements, changes }: ReturnType<typeof nextBatch>) =>
    db.transaction(async (trx) => {
      const now = new Date();
      if (!(await deductStockBatch(trx, changes, now))) throw new Error('the guard refused');
      await insertPlacements(trx, placements, now);
    });

  for (let i = 0; i < WARMUP; i++) await writeBatch(nextBatch());
  const own: number[] = [];
  const database: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < BATCHES; i++) {
    const batch = nextBatch();
    const cpu = process.cpuUsage();
    const dbCpu = MARIADB_PID ? cpuMicros(MARIADB_PID) : 0;
    const started = performance.now();
    await writeBatch(batch);
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
    db: DB,
    settings: { batch: BATCH, batches: BATCHES, warmupBatches: WARMUP, products: PRODUCTS, lines: LINES },
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
    path.join(
      dir,
      `order-writes${DB === 'sqlite' ? '-sqlite' : ''}${LABEL ? `-${LABEL}` : ''}-${stamp}.json`,
    ),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  await db.destroy();
  if (sqliteDir) fs.rmSync(sqliteDir, { recursive: true, force: true });
}
