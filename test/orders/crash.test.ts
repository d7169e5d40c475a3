// Crash: the real server (`node --import tsx lib/server.ts`) under order load is killed with SIGKILL,
// restarted on the same database, and then the books must balance: for every product, initial stock =
// stock + units of non-cancelled orders (and salesCount = those units); every order answered 201 exists;
// every committed order's OrderCreated notification is delivered exactly once to its seller, including
// the ones the killed process had not delivered yet (picked up from the outbox by the new process).
import test from 'ava';
import knexFactory, { type Knex } from 'knex';
import { createTokenService } from '../../lib/auth/tokens';
import { knexConfig } from '../../lib/db';
import { assertAcknowledgedExist, assertStockConserved } from '../helpers/books';
import { createCategory, createMember, createProduct, type DataTarget } from '../helpers/factories';
import { createTestDatabase, request, testConfig, type TestDatabase } from '../helpers/harness';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { eventually, orderBody } from './order-fixtures';

const startServer = (database: TestDatabase) =>
  startServerProcess({ ...database.env, INVENTORY_MODE: 'actor' });

let database: TestDatabase;
let db: Knex;
const children: ServerProcess[] = [];
test.before(async () => {
  database = await createTestDatabase();
});
test.after.always(async () => {
  for (const child of children) child.child.kill('SIGKILL');
  await db?.destroy();
  await database?.drop();
});

test('SIGKILL mid-load, restart: stock conserved, answered orders exist, each OrderCreated delivered exactly once', async (t) => {
  const config = testConfig(database.env);
  const first = await startServer(database);
  children.push(first);
  db = knexFactory(knexConfig(config.database));
  const tokens = createTokenService(config.jwt);

  const target: DataTarget = { db, tokens, bcryptCost: config.bcryptCost };
  const sellers = [await createMember(target, 'SELLER'), await createMember(target, 'SELLER')];
  const buyers = await Promise.all(Array.from({ length: 8 }, () => createMember(target, 'BUYER')));
  const categoryId = await createCategory(target);
  const initial = new Map<number, number>();
  for (let i = 0; i < 6; i++) {
    const id = await createProduct(target, sellers[i % 2].id, {
      categoryId,
      price: '5.00',
      stockQuantity: 400,
    });
    initial.set(id, 400);
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
  first.child.kill('SIGKILL');
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

  // every 201 answer is a committed order; stock conservation per product
  await assertAcknowledgedExist(t, db, answered);
  await assertStockConserved(t, db, initial);

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

  second.child.kill('SIGTERM');
  await second.exited;
});
