// `npm run seed:demo -- --products 100000 [--sellers 20] [--batch 1000] [--seed 1]`: a realistic demo
// catalogue on the configured database (SQLite by default, MariaDB/MySQL with DATABASE_URL). Runs the
// migrations and the idempotent base seed first, then appends products in multi-row INSERTs with a
// progress bar on stderr. createdAt spreads over the last year with deliberate ties (whole seconds and
// repeated instants), so keyset pagination is exercised the way real imports stress it.
import { pathToFileURL } from 'node:url';
import { ConfigError, loadConfig } from '../lib/config';
import { createDb, dialect, type Db } from '../lib/db';
import { hashPassword } from '../lib/auth/passwords';
import { seedDemo } from '../seeds/01_demo';
import { migrateLatest } from '../lib/migration-mark';

export interface SeedCatalogOptions {
  products: number;
  sellers: number;
  batch: number;
  seed: number;
  sellerPassword: string;
  bcryptCost: number;
  onProgress?: (done: number, total: number) => void;
}

const CATALOG: Record<string, { nouns: string[]; min: number; max: number }> = {
  Phones: {
    nouns: ['Smartphone', 'Phone Case', 'Charger', 'Screen Protector', 'Power Bank'],
    min: 9,
    max: 1499,
  },
  Laptops: {
    nouns: ['Laptop', 'Ultrabook', 'Laptop Stand', 'Docking Station', 'Sleeve'],
    min: 19,
    max: 3499,
  },
  Audio: { nouns: ['Headphones', 'Earbuds', 'Speaker', 'Soundbar', 'Microphone'], min: 15, max: 899 },
  Kitchen: { nouns: ['Kettle', 'Knife Set', 'Frying Pan', 'Coffee Grinder', 'Blender'], min: 8, max: 499 },
  Furniture: { nouns: ['Desk', 'Chair', 'Bookshelf', 'Lamp', 'Side Table'], min: 25, max: 1999 },
  Books: { nouns: ['Novel', 'Cookbook', 'Travel Guide', 'Biography', 'Poetry Collection'], min: 5, max: 79 },
};
const ADJECTIVES = [
  'Compact',
  'Wireless',
  'Premium',
  'Classic',
  'Eco',
  'Smart',
  'Vintage',
  'Ultra',
  'Portable',
  'Deluxe',
  'Minimal',
  'Pro',
];
const BRANDS = [
  'Northwind',
  'Acme',
  'Globex',
  'Initech',
  'Umbrella',
  'Hooli',
  'Vandelay',
  'Stark',
  'Wayne',
  'Tyrell',
];

/** Small deterministic PRNG (mulberry32), so a seed value reproduces the same catalogue. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const demoSellerEmails = (count: number) =>
  Array.from({ length: count }, (_, i) => `demo-seller-${i + 1}@marketplace.test`);

/**
 * An address taken by someone else's account (a buyer who signed up with it) is never handed products: the whole
 * run is refused before anything is written (the script checks before the base seed too), as the base seed
 * refuses its own addresses.
 */
export async function assertDemoSellerAddressesFree(db: Db, count: number): Promise<void> {
  const taken = await db('members')
    .whereIn('email', demoSellerEmails(count))
    .whereNot('role', 'SELLER')
    .select('email', 'role');
  if (taken.length > 0) {
    const { email, role } = taken[0];
    throw new Error(`The demo seller address ${email} belongs to a ${role} account: no products were added`);
  }
}

async function ensureSellers(db: Db, count: number, password: string, cost: number): Promise<number[]> {
  const emails = demoSellerEmails(count);
  await assertDemoSellerAddressesFree(db, count);
  const passwordHash = await hashPassword(password, cost);
  const ids: number[] = [];
  const now = new Date();
  for (const [index, email] of emails.entries()) {
    const existing = await db('members').where({ email }).first('id');
    if (existing) {
      ids.push(Number(existing.id));
      continue;
    }
    const i = index + 1;
    const [id] = await db('members').insert({
      email,
      password_hash: passwordHash,
      name: `Demo Seller ${i}`,
      phone: '010-0000-0000',
      role: 'SELLER',
      business_number: `100-00-${String(i).padStart(5, '0')}`,
      created_at: now,
      updated_at: now,
    });
    ids.push(Number(id));
  }
  return ids;
}

/** Appends `products` products (base seed and sellers first). Returns how many were inserted. */
export async function seedCatalog(db: Db, options: SeedCatalogOptions): Promise<number> {
  const random = prng(options.seed);
  const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)];
  const sellerIds = await ensureSellers(db, options.sellers, options.sellerPassword, options.bcryptCost);
  const categories = await db('categories').whereIn('name', Object.keys(CATALOG)).select('id', 'name');
  if (categories.length === 0) throw new Error('No demo categories found: the base seed did not run');

  const yearMs = 365 * 24 * 3600 * 1000;
  const end = Date.now();
  let previous = end - yearMs;
  // knex writes a multi-row INSERT for SQLite as a compound SELECT, which SQLite caps at 500 terms.
  const batch = dialect.isMysql(db) ? options.batch : Math.min(options.batch, 500);
  let done = 0;
  while (done < options.products) {
    const rows = [];
    const n = Math.min(batch, options.products - done);
    for (let i = 0; i < n; i++) {
      const category = pick(categories);
      const spec = CATALOG[category.name as string];
      const roll = random();
      // 10% repeat the previous instant exactly, 30% fall on a whole second: plenty of createdAt ties.
      let createdAtMs = roll < 0.1 ? previous : end - Math.floor(random() * yearMs);
      if (roll >= 0.1 && roll < 0.4) createdAtMs -= createdAtMs % 1000;
      previous = createdAtMs;
      const createdAt = new Date(createdAtMs);
      const statusRoll = random();
      const status =
        statusRoll < 0.85
          ? 'ON_SALE'
          : statusRoll < 0.92
            ? 'SOLD_OUT'
            : statusRoll < 0.97
              ? 'DRAFT'
              : 'DELETED';
      const whole = Math.floor(spec.min + (spec.max - spec.min) * random() ** 2);
      const cents = pick([0, 0, 50, 90, 95, 99, 99]);
      rows.push({
        seller_id: pick(sellerIds),
        category_id: category.id,
        name: `${pick(BRANDS)} ${pick(ADJECTIVES)} ${pick(spec.nouns)} ${1000 + Math.floor(random() * 9000)}`,
        description: `A ${spec.nouns[0].toLowerCase()}-aisle favourite, generated for the demo catalogue.`,
        price: `${whole}.${String(cents).padStart(2, '0')}`,
        stock_quantity: status === 'SOLD_OUT' ? 0 : 1 + Math.floor(random() * 500),
        status,
        // Skewed like real sales: most products sell little, a few sell a lot.
        sales_count: Math.floor(2000 * random() ** 6),
        created_at: createdAt,
        updated_at: createdAt,
      });
    }
    await db('products').insert(rows);
    done += n;
    options.onProgress?.(done, options.products);
  }
  return done;
}

/** `[#####.....]  45%  45000/100000  9800 rows/s` redrawn in place on a terminal, one line per 10% otherwise. */
export function progressBar(label: string, out: NodeJS.WriteStream = process.stderr) {
  const started = Date.now();
  let lastDecile = -1;
  return (done: number, total: number) => {
    const ratio = total === 0 ? 1 : done / total;
    const width = 30;
    const filled = Math.round(ratio * width);
    const rate = Math.round(done / Math.max((Date.now() - started) / 1000, 0.001));
    const line = `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ${done}/${total}  ${rate} rows/s`;
    if (out.isTTY) out.write(`\r${line}${done >= total ? '\n' : ''}`);
    else if (Math.floor(ratio * 10) !== lastDecile || done >= total) {
      lastDecile = Math.floor(ratio * 10);
      out.write(`${line}\n`);
    }
  };
}

function parseArgs(argv: string[]): Record<string, number> {
  const out: Record<string, number> = { products: 10_000, sellers: 20, batch: 1000, seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const match = /^--(products|sellers|batch|seed)(?:=(.*))?$/.exec(argv[i]);
    if (!match)
      throw new Error(`Unknown argument ${argv[i]} (usage: --products N --sellers N --batch N --seed N)`);
    const value = Number(match[2] ?? argv[++i]);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--${match[1]} needs a whole number`);
    out[match[1]] = value;
  }
  if (out.batch < 1 || out.batch > 5000) throw new Error('--batch must be between 1 and 5000');
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const config = loadConfig();
  // Thousands of fake products and sellers sharing one password: never into a production database.
  if (config.env === 'production') {
    throw new Error('Refusing to add a demo catalogue with NODE_ENV=production');
  }
  const db = createDb(config.database);
  try {
    await migrateLatest(db);
    await assertDemoSellerAddressesFree(db, args.sellers);
    await seedDemo(db, config);
    const started = Date.now();
    const inserted = await seedCatalog(db, {
      products: args.products,
      sellers: args.sellers,
      batch: args.batch,
      seed: args.seed,
      sellerPassword: config.seedPasswords.seller,
      bcryptCost: config.bcryptCost,
      onProgress: progressBar('products'),
    });
    const total = await db('products').count({ n: '*' }).first();
    process.stderr.write(
      `Inserted ${inserted} products in ${((Date.now() - started) / 1000).toFixed(1)} s (${total?.n} in the catalogue)\n`,
    );
  } finally {
    await db.destroy();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    const message = err instanceof ConfigError ? err.message : (err as Error).message;
    process.stderr.write(`${message.length > 500 ? `${message.slice(0, 500)}...` : message}\n`);
    process.exitCode = 1;
  });
}
