// Shared by the catalogue benchmarks (bench:catalog, bench:keyword): a bench database migrated, with the demo
// seed, and topped up to `products` with the demo catalogue (seed 1, 20 sellers); reused as it is by later runs.
import knexFactory from 'knex';
import type { Config } from '../../lib/config';
import type { Db } from '../../lib/db';
import { migrateLatest } from '../../lib/migration-mark';
import { progressBar, seedCatalog } from '../../scripts/seed-demo';
import { seedDemo } from '../../seeds/01_demo';

export async function fillCatalog(db: Db, config: Config, products: number, name: string): Promise<void> {
  await migrateLatest(db);
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

/**
 * Creates the MariaDB bench database named by `databaseUrl` if it is missing (afresh with `reseed`); returns its
 * name.
 */
export async function ensureMysqlDatabase(databaseUrl: string, reseed = false): Promise<string> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error('The bench database name must be [A-Za-z0-9_]+');
  const server = knexFactory({
    client: 'mysql2',
    connection: `${url.protocol}//${url.username ? `${url.username}${url.password ? `:${url.password}` : ''}@` : ''}${url.host}`,
  });
  try {
    if (reseed) await server.raw(`DROP DATABASE IF EXISTS \`${name}\``);
    await server.raw(
      `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await server.destroy();
  }
  return name;
}
