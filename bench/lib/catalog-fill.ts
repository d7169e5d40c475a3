// Shared by the catalogue benchmarks (bench:catalog, bench:keyword): a bench database migrated, with the demo
// seed, and topped up to `products` with the demo catalogue (seed 1, 20 sellers); reused as it is by later runs.
import type { Config } from '../../lib/config';
import type { Db } from '../../lib/db';
import { progressBar, seedCatalog } from '../../scripts/seed-demo';
import { seedDemo } from '../../seeds/01_demo';

export async function fillCatalog(db: Db, config: Config, products: number, name: string): Promise<void> {
  await db.migrate.latest();
  await seedDemo(db, config);
  const count = Number((await db('products').count({ n: '*' }).first())?.n ?? 0);
  if (count < products) {
    await seedCatalog(db, {
      products: products - count,
      sellers: 20,
      batch: 1000,
      seed: 1,
      sellerPassword: config.seedPasswords.seller,
      bcryptCost: config.bcryptCost,
      onProgress: progressBar('seeding products'),
    });
  } else {
    process.stderr.write(`Reusing ${count} products in ${name}\n`);
  }
}
