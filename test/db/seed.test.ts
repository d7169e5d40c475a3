import test from 'ava';
import { createDb } from '../../lib/db';
import { verifyPassword } from '../../lib/auth/passwords';
import { seedDemo, DEMO_ACCOUNTS } from '../../seeds/01_demo';
import { createTestDatabase, testConfig, type TestDatabase } from '../helpers/harness';

let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  await database?.drop();
});

async function counts(db: ReturnType<typeof createDb>) {
  const out: Record<string, number> = {};
  for (const table of ['members', 'categories', 'products']) {
    const [{ n }] = await db(table).count({ n: '*' });
    out[table] = Number(n);
  }
  return out;
}

test.serial('the seed creates the demo accounts, categories and products, and is idempotent', async (t) => {
  const config = testConfig(database.env);
  const db = createDb(config.database);
  try {
    await db.migrate.latest();
    await seedDemo(db, config);
    const first = await counts(db);
    t.deepEqual(first, { members: 3, categories: 8, products: 5 });
    const members = await db('members')
      .orderBy('id')
      .select('email', 'role', 'password_hash', 'business_number');
    t.deepEqual(
      members.map((m) => [m.email, m.role]),
      DEMO_ACCOUNTS.map((a) => [a.email, a.role]),
    );
    t.true(await verifyPassword('Seller123!', members[1].password_hash));
    t.is(members[1].business_number, '123-45-67890');

    const snapshot = await db('members').select('id', 'password_hash', 'updated_at');
    await seedDemo(db, config);
    t.deepEqual(await counts(db), first, 'running it twice changes nothing');
    t.deepEqual(await db('members').select('id', 'password_hash', 'updated_at'), snapshot);
  } finally {
    await db.destroy();
  }
});

test.serial(
  'the demo catalogue is written once: a renamed demo product or category stays renamed',
  async (t) => {
    const config = testConfig(database.env);
    const db = createDb(config.database);
    try {
      const before = await counts(db);
      await db('products').where({ name: 'Demo Phone X' }).update({ name: 'My own phone' });
      await db('categories').where({ name: 'Books' }).update({ name: 'Novels', name_key: 'novels' });
      await seedDemo(db, config);
      t.deepEqual(await counts(db), before);
      t.is(await db('products').where({ name: 'Demo Phone X' }).first('id'), undefined);
      t.is(await db('categories').where({ name: 'Books' }).first('id'), undefined);
    } finally {
      await db.destroy();
    }
  },
);

test.serial('seed passwords come from the environment', async (t) => {
  const config = testConfig({ ...database.env, SEED_BUYER_PASSWORD: 'Another-Pass-1' });
  const db = createDb(config.database);
  try {
    await db('members').where({ email: 'buyer@marketplace.test' }).delete();
    await seedDemo(db, config);
    const buyer = await db('members').where({ email: 'buyer@marketplace.test' }).first('password_hash');
    t.true(await verifyPassword('Another-Pass-1', buyer.password_hash));
  } finally {
    await db.destroy();
  }
});

test('in production the seed refuses the development default passwords', async (t) => {
  const config = { ...testConfig(database.env), env: 'production' as const };
  const db = createDb(config.database);
  try {
    const err = await t.throwsAsync(seedDemo(db, config));
    t.regex(err!.message, /Refusing to seed: SEED_ADMIN_PASSWORD must be set/);
  } finally {
    await db.destroy();
  }
});

test.serial(
  'a demo address already taken by an account of another role stops the seed: nothing is adopted',
  async (t) => {
    const fresh = await createTestDatabase();
    const config = testConfig(fresh.env);
    const db = createDb(config.database);
    try {
      await db.migrate.latest();
      const seller = DEMO_ACCOUNTS.find((account) => account.role === 'SELLER')!;
      const now = new Date();
      await db('members').insert({
        email: seller.email,
        password_hash: 'not-the-demo-hash',
        name: 'Someone',
        phone: '010-1111-2222',
        role: 'BUYER',
        created_at: now,
        updated_at: now,
      });
      const err = await t.throwsAsync(seedDemo(db, config));
      t.regex(err!.message, new RegExp(`demo SELLER address ${seller.email} belongs to a BUYER account`));
      // The seed's transaction wrote nothing: no demo products owned by that buyer, no other demo rows.
      t.is(Number((await db('products').count({ n: '*' }))[0].n), 0);
      t.is(Number((await db('members').count({ n: '*' }))[0].n), 1);
      t.is(
        (await db('members').where('email', seller.email).first('password_hash')).password_hash,
        'not-the-demo-hash',
      );
    } finally {
      await db.destroy();
      await fresh.drop();
    }
  },
);
