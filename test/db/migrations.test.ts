// The same migrations run up, down and up again on the database under test, with the constraints the
// other areas rely on.
import test from 'ava';
import { createDb, isUniqueViolation } from '../../lib/db';
import { createTestDatabase, testConfig, type TestDatabase } from '../helpers/harness';

const TABLES = [
  'members',
  'refresh_tokens',
  'categories',
  'products',
  'product_images',
  'orders',
  'order_items',
  'order_status_history',
  'idempotency_keys',
  'notification_outbox',
  'notifications',
];

let database: TestDatabase;
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  await database?.drop();
});

test.serial('migrations run up, down and up again', async (t) => {
  const db = createDb(testConfig(database.env).database);
  try {
    const [, applied] = await db.migrate.latest();
    t.true(applied.length >= 4);
    for (const table of TABLES) t.true(await db.schema.hasTable(table), `${table} exists`);

    await db.migrate.rollback(undefined, true);
    for (const table of TABLES) t.false(await db.schema.hasTable(table), `${table} dropped`);

    await db.migrate.latest();
    for (const table of TABLES) t.true(await db.schema.hasTable(table), `${table} exists again`);
    const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
    t.is(pending.length, 0);
  } finally {
    await db.destroy();
  }
});

test.serial('unique constraints: member email, order number; times keep milliseconds', async (t) => {
  const db = createDb(testConfig(database.env).database);
  try {
    await db.migrate.latest();
    const at = new Date('2026-11-22T10:41:14.123Z');
    const member = {
      email: 'dup@example.test',
      password_hash: 'x',
      name: 'n',
      phone: 'p',
      role: 'BUYER',
      created_at: at,
      updated_at: at,
    };
    const [memberId] = await db('members').insert(member);
    const err = await t.throwsAsync(db('members').insert(member), { any: true });
    t.true(isUniqueViolation(err));

    const order = {
      order_number: 'ORD-1',
      buyer_id: memberId,
      status: 'PENDING',
      total_amount: '10.50',
      zip_code: '1',
      address: 'a',
      address_detail: 'b',
      receiver_name: 'r',
      receiver_phone: 'p',
      ordered_at: at,
      updated_at: at,
    };
    await db('orders').insert(order);
    t.true(isUniqueViolation(await t.throwsAsync(db('orders').insert(order), { any: true })));

    const row = await db('members').where({ id: memberId }).first('created_at');
    t.is(new Date(row.created_at).toISOString(), '2026-11-22T10:41:14.123Z');
    const money = await db('orders').where({ order_number: 'ORD-1' }).first('total_amount');
    t.is(Number(money.total_amount), 10.5);
  } finally {
    await db.destroy();
  }
});
