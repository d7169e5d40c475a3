// Crash: the real server (`node --import tsx lib/server.ts`) under order load is killed with SIGKILL,
// restarted on the same database, and then the books must balance: for every product, initial stock =
// stock + units of non-cancelled orders (and salesCount = those units); every order answered 201 exists;
// every committed order's OrderCreated notification is delivered exactly once to its seller, including
// the ones the killed process had not delivered yet (picked up from the outbox by the new process).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import knexFactory, { type Knex } from 'knex';
import { createTokenService } from '../../lib/auth/tokens';
import { knexConfig } from '../../lib/db';
import { createTestDatabase, request, testConfig, type TestDatabase } from '../helpers/harness';
import { eventually, orderBody } from './order-fixtures';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Child {
  process: ChildProcess;
  url: string;
  output: string[];
}

function startServer(database: TestDatabase): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/server.ts'], {
    cwd: root,
    env: {
      ...process.env,
      ...database.env,
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      BCRYPT_COST: '4',
      SEED_ON_START: 'false',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'line',
      INVENTORY_MODE: 'actor',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output.join('')}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      const match = /Listening on [\d.]+:(\d+)/.exec(output.join(''));
      if (match) {
        clearTimeout(timer);
        resolve({ process: child, url: `http://127.0.0.1:${match[1]}`, output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output.join('')}`)));
  });
}

let database: TestDatabase;
let db: Knex;
const children: Child[] = [];
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  for (const child of children) child.process.kill('SIGKILL');
  await db?.destroy();
  await database?.drop();
});

test('SIGKILL mid-load, restart: stock conserved, answered orders exist, each OrderCreated delivered exactly once', async (t) => {
  const config = testConfig(database.env);
  const first = await startServer(database);
  children.push(first);
  db = knexFactory(knexConfig(config.database));
  const tokens = createTokenService(config.jwt);

  const now = new Date();
  const member = async (role: 'BUYER' | 'SELLER', i: number) => {
    const [id] = await db('members').insert({
      email: `${role.toLowerCase()}-${i}-${Date.now()}@crash.test`,
      password_hash: 'x',
      name: role,
      phone: '010',
      role,
      business_number: role === 'SELLER' ? '1' : null,
      created_at: now,
      updated_at: now,
    });
    return { id: Number(id), token: tokens.signAccessToken({ id: Number(id), role, tokenVersion: 0 }) };
  };
  const sellers = [await member('SELLER', 1), await member('SELLER', 2)];
  const buyers = await Promise.all(Array.from({ length: 8 }, (_, i) => member('BUYER', i)));
  const [categoryId] = await db('categories').insert({
    name: 'Crash',
    name_key: 'crash',
    parent_key: 0,
    parent_id: null,
    display_order: 0,
    created_at: now,
  });
  const initial = new Map<number, number>();
  for (let i = 0; i < 6; i++) {
    const stock = 400;
    const [id] = await db('products').insert({
      seller_id: sellers[i % 2].id,
      category_id: categoryId,
      name: `Crash ${i}`,
      description: null,
      price: '5.00',
      stock_quantity: stock,
      status: 'ON_SALE',
      sales_count: 0,
      created_at: now,
      updated_at: now,
    });
    initial.set(Number(id), stock);
  }
  const productIds = [...initial.keys()];

  // Load: 24 concurrent clients placing 1-3 item carts (and some cancels) until the process dies.
  const answered: number[] = [];
  let stop = false;
  const client = async (n: number) => {
    const buyer = buyers[n % buyers.length];
    for (let i = 0; !stop; i++) {
      const picks = productIds.filter((_, k) => (k + n + i) % 3 === 0).slice(0, 1 + ((n + i) % 3));
      try {
        const res = await request(first.url, 'POST', '/api/v1/orders', {
          token: buyer.token,
          body: orderBody(picks.map((productId) => ({ productId, quantity: 1 + (i % 2) }))),
        });
        if (res.status === 201) {
          for (const order of res.body.orders) answered.push(order.id);
          if (i % 5 === 0)
            await request(first.url, 'POST', `/api/v1/orders/${res.body.orders[0].id}/cancel`, {
              token: buyer.token,
            });
        }
      } catch {
        return; // the server is gone
      }
    }
  };
  const load = Promise.all(Array.from({ length: 24 }, (_, n) => client(n)));
  await eventually(async () => answered.length >= 60, 30_000);
  first.process.kill('SIGKILL');
  stop = true;
  await load;
  t.true(answered.length >= 60);

  const second = await startServer(database);
  children.push(second);
  // the new process delivers what the killed one left in the outbox
  await eventually(async () => {
    const row = await db('notification_outbox').whereNull('delivered_at').count({ n: '*' }).first();
    return Number(row?.n) === 0;
  }, 15_000);

  // every 201 answer is a committed order
  const existing = new Set(
    (await db('orders').whereIn('id', answered).select('id')).map((row: { id: number }) => Number(row.id)),
  );
  t.is(existing.size, new Set(answered).size);

  // stock conservation per product
  const units = (await db('order_items')
    .join('orders', 'orders.id', 'order_items.order_id')
    .whereNot('orders.status', 'CANCELLED')
    .groupBy('order_items.product_id')
    .select('order_items.product_id as productId')
    .sum({ n: 'order_items.quantity' })) as Array<{ productId: number; n: number | string }>;
  const sold = new Map(units.map((row) => [Number(row.productId), Number(row.n)]));
  for (const [id, stock] of initial) {
    const row = await db('products').where('id', id).first('stock_quantity', 'sales_count');
    t.is(row.stock_quantity + (sold.get(id) ?? 0), stock, `product ${id}`);
    t.is(row.sales_count, sold.get(id) ?? 0, `salesCount of product ${id}`);
  }

  // each order's OrderCreated notification exactly once, to its seller
  const orders = (await db('orders')
    .join('order_items', 'order_items.order_id', 'orders.id')
    .distinct('orders.id as id', 'order_items.seller_id as sellerId')) as Array<{
    id: number;
    sellerId: number;
  }>;
  const created = (await db('notifications')
    .where('type', 'OrderCreated')
    .select('member_id', 'payload')) as Array<{ member_id: number; payload: string }>;
  const seen = new Map<number, number[]>();
  for (const note of created) {
    const { orderId } = JSON.parse(note.payload) as { orderId: number };
    seen.set(orderId, [...(seen.get(orderId) ?? []), note.member_id]);
  }
  t.is(created.length, orders.length);
  for (const order of orders) t.deepEqual(seen.get(Number(order.id)), [order.sellerId], `order ${order.id}`);
  // and the seller sees them through the API of the restarted process
  const mine = orders.filter((order) => order.sellerId === sellers[0].id).length;
  const page = await request(second.url, 'GET', '/api/v1/notifications?size=1', { token: sellers[0].token });
  t.is(page.status, 200);
  t.is(
    page.body.totalElements,
    mine +
      (await db('notifications')
        .where({ member_id: sellers[0].id })
        .whereNot('type', 'OrderCreated')
        .count({ n: '*' })
        .first()
        .then((r) => Number(r?.n))),
  );

  second.process.kill('SIGTERM');
  await new Promise((resolve) => second.process.once('exit', resolve));
});
