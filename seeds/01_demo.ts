// Idempotent demo data: the three demo accounts of API.md, a small category tree and a few products of
// the demo seller. Inserts only what is missing (the catalogue only once per database: seed_marks), so running it
// twice changes nothing, also when several instances seed on start at the same moment (on MySQL/MariaDB they
// take turns).
import type { Knex } from 'knex';
import { DEFAULT_SEED_PASSWORDS, loadConfig, type Config } from '../lib/config';
import { hashPassword } from '../lib/auth/passwords';
import { categoryNameKey } from '../lib/categories/category-repository';
import { dialect } from '../lib/db';

export const DEMO_ACCOUNTS = [
  { key: 'admin', email: 'admin@marketplace.test', name: 'Demo Admin', role: 'ADMIN', businessNumber: null },
  {
    key: 'seller',
    email: 'seller@marketplace.test',
    name: 'Demo Seller',
    role: 'SELLER',
    businessNumber: '123-45-67890',
  },
  { key: 'buyer', email: 'buyer@marketplace.test', name: 'Demo Buyer', role: 'BUYER', businessNumber: null },
] as const;

const CATEGORY_TREE: Array<{ name: string; displayOrder: number; children: string[] }> = [
  { name: 'Electronics', displayOrder: 1, children: ['Phones', 'Laptops', 'Audio'] },
  { name: 'Home', displayOrder: 2, children: ['Kitchen', 'Furniture'] },
  { name: 'Books', displayOrder: 3, children: [] },
];

const DEMO_PRODUCTS = [
  { category: 'Phones', name: 'Demo Phone X', price: '699.00', stock: 50 },
  { category: 'Laptops', name: 'Demo Laptop 14', price: '1299.99', stock: 20 },
  { category: 'Audio', name: 'Demo Headphones', price: '149.50', stock: 100 },
  { category: 'Kitchen', name: 'Demo Kettle', price: '39.90', stock: 75 },
  { category: 'Books', name: 'Demo Novel', price: '12.00', stock: 200 },
];

/** seed_marks' row for the demo catalogue (categories and products). */
const CATALOG_MARK = 'demo-catalog';

/** The SQLite seeds of this process, one after another (see seedDemo). */
let sqliteSeedTurn: Promise<void> = Promise.resolve();

/** The knex seed entry point (`npm run db:seed`, `knex seed:run`). */
export async function seed(knex: Knex): Promise<void> {
  await seedDemo(knex, loadConfig());
}

export async function seedDemo(knex: Knex, config: Config): Promise<void> {
  if (config.env === 'production') {
    for (const [key, value] of Object.entries(config.seedPasswords)) {
      if (value === DEFAULT_SEED_PASSWORDS[key as keyof typeof DEFAULT_SEED_PASSWORDS]) {
        throw new Error(
          `Refusing to seed: SEED_${key.toUpperCase()}_PASSWORD must be set (not the development default) in production`,
        );
      }
    }
  }
  // Instances started together each seed on start, and every check below reads before it inserts, so seeds take
  // turns. On SQLite, within the process: several instances on one SQLite file are not a deployment (SQLite is
  // the single embedded instance's), but several pools of one process may seed at once (the tests start them so),
  // and their connections cannot wait for one another's write lock on the one event loop.
  if (!dialect.isMysql(knex)) {
    const turn = sqliteSeedTurn.then(() => writeDemo(knex, config));
    sqliteSeedTurn = turn.catch(() => undefined);
    return turn;
  }
  // On MySQL/MariaDB they take turns on the one row every migrated database has, knex's migration lock (the row is
  // only read, FOR UPDATE, and held to the COMMIT), so each reads what the one before it committed.
  await knex.transaction(
    async (trx) => {
      await trx('knex_migrations_lock').forUpdate().select('is_locked');
      await writeDemo(trx, config);
    },
    { isolationLevel: 'read committed' },
  );
}

async function writeDemo(knex: Knex, config: Config): Promise<void> {
  const now = new Date();
  const ids: Record<string, number> = {};
  // Someone else's account under a demo address (a signup before the seed ran) is never adopted as the demo
  // account (it would get the demo products, or pass for the admin): checked for every account before any write.
  const existing: Record<string, { id: number; role: string } | undefined> = {};
  for (const account of DEMO_ACCOUNTS) {
    const row = await knex('members').where({ email: account.email }).first('id', 'role');
    if (row && row.role !== account.role) {
      throw new Error(
        `The demo ${account.role} address ${account.email} belongs to a ${row.role} account: not seeded; ` +
          'remove or rename that account, or do not seed this database',
      );
    }
    existing[account.key] = row;
  }
  for (const account of DEMO_ACCOUNTS) {
    const found = existing[account.key];
    if (found) {
      ids[account.key] = found.id;
      continue;
    }
    const passwordHash = await hashPassword(config.seedPasswords[account.key], config.bcryptCost);
    const [id] = await knex('members').insert({
      email: account.email,
      password_hash: passwordHash,
      name: account.name,
      phone: '010-0000-0000',
      role: account.role,
      business_number: account.businessNumber,
      created_at: now,
      updated_at: now,
    });
    ids[account.key] = id;
  }

  // The catalogue is written once per database (the accounts above whenever one is missing, so the README's demo
  // logins keep working): later renames and deletes of demo categories and products stand. A database seeded
  // before the mark existed gets what is missing by name once more, then the mark.
  if (await knex('seed_marks').where({ name: CATALOG_MARK }).first('name')) return;
  const categoryIds: Record<string, number> = {};
  const ensureCategory = async (name: string, parentId: number | null, displayOrder: number) => {
    const key = { name_key: categoryNameKey(name), parent_key: parentId ?? 0 };
    const existing = await knex('categories').where(key).first('id');
    if (existing) return existing.id as number;
    const [id] = await knex('categories').insert({
      ...key,
      name,
      parent_id: parentId,
      display_order: displayOrder,
      created_at: now,
    });
    return id as number;
  };
  for (const root of CATEGORY_TREE) {
    categoryIds[root.name] = await ensureCategory(root.name, null, root.displayOrder);
    for (const [index, child] of root.children.entries()) {
      categoryIds[child] = await ensureCategory(child, categoryIds[root.name], index + 1);
    }
  }

  for (const product of DEMO_PRODUCTS) {
    const existing = await knex('products').where({ seller_id: ids.seller, name: product.name }).first('id');
    if (existing) continue;
    await knex('products').insert({
      seller_id: ids.seller,
      category_id: categoryIds[product.category],
      name: product.name,
      description: `${product.name}, a demo product.`,
      price: product.price,
      stock_quantity: product.stock,
      status: 'ON_SALE',
      sales_count: 0,
      created_at: now,
      updated_at: now,
    });
  }
  // Another process seeding the same SQLite file at once (its turns are per process) may have marked it first.
  await knex('seed_marks').insert({ name: CATALOG_MARK, applied_at: now }).onConflict('name').ignore();
}
