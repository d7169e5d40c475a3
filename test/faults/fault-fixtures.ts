// Shared pieces of the fault suite: the service behind a TCP proxy in front of its own MariaDB database, a
// world of sellers, buyers and stocked products made straight in the database, the books that must balance
// after any fault, and the check that no log carries a secret.
import type { ExecutionContext } from 'ava';
import knexFactory, { type Knex } from 'knex';
import { knexConfig } from '../../lib/db';
import {
  createCategory,
  createMember,
  createProduct,
  type DataTarget,
  type TestMember,
} from '../helpers/factories';
import {
  createTestDatabase,
  DB_KIND,
  startTestApp,
  testConfig,
  type TestApp,
  type TestDatabase,
} from '../helpers/harness';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';

/** The fault suite needs MariaDB (a TCP proxy in front of a database server); on SQLite it says so. */
export const onMariaDb = DB_KIND === 'mysql';
export const SKIPPED_ON_SQLITE = 'fault suite: runs on MariaDB only (TEST_DB=mysql), skipped on SQLite';

export interface FaultWorld {
  sellers: TestMember[];
  buyers: TestMember[];
  /** product id -> initial stock */
  initial: Map<number, number>;
}

/** Two sellers, `buyers` buyers, `products` products (alternating sellers) of `stock` each, one category. */
export async function makeWorld(
  target: DataTarget,
  options: { buyers: number; products: number; stock: number },
): Promise<FaultWorld> {
  const sellers = [await createMember(target, 'SELLER'), await createMember(target, 'SELLER')];
  const buyers = await Promise.all(Array.from({ length: options.buyers }, () => createMember(target)));
  const categoryId = await createCategory(target);
  const initial = new Map<number, number>();
  for (let i = 0; i < options.products; i++) {
    const id = await createProduct(target, sellers[i % 2].id, {
      categoryId,
      name: `Fault product ${i}`,
      price: '5.00',
      stockQuantity: options.stock,
    });
    initial.set(id, options.stock);
  }
  return { sellers, buyers, initial };
}

export interface ProxiedService {
  database: TestDatabase;
  /** Between the service and MariaDB: refuses, black-holes and cuts on the test's word. */
  proxy: TcpProxy;
  /** The service in-process, connected through the proxy. */
  app: TestApp;
  /** Straight to MariaDB (never through the proxy): the world is made and the books checked with it. */
  db: Knex;
  world: FaultWorld;
  close(): Promise<void>;
}

/** A fresh database, the proxy in front of it, the service through the proxy, and a world. */
export async function startBehindProxy(options: {
  env?: Record<string, string>;
  world: { buyers: number; products: number; stock: number };
}): Promise<ProxiedService> {
  // Undone in reverse order by close(), also when a later step fails.
  const undo: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const step of undo.reverse()) await step();
  };
  try {
    const database = await createTestDatabase();
    undo.push(() => database.drop());
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(database.env.DATABASE_URL).port || 3306),
    });
    undo.push(() => proxy.close());
    const db = knexFactory(knexConfig(testConfig(database.env).database));
    undo.push(() => db.destroy());
    const app = await startTestApp({
      database,
      logLevel: 'info',
      env: { ...options.env, DATABASE_URL: proxy.urlFor(database.env.DATABASE_URL) },
    });
    undo.push(() => app.close());
    const world = await makeWorld(
      { db, tokens: app.bundle.services.tokens, bcryptCost: app.config.bcryptCost },
      options.world,
    );
    return { database, proxy, app, db, world, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** An order body whose address detail names the request, so its orders can be found afterwards. */
export function taggedOrder(items: Array<{ productId: number; quantity: number }>, tag: string) {
  return {
    orderItems: items,
    shippingAddress: {
      zipCode: '04524',
      address: '1 Market Street',
      addressDetail: tag,
      receiverName: 'Kim Buyer',
      receiverPhone: '010-0000-0000',
    },
  };
}

/** For every product: stock + units of non-cancelled orders = initial stock, and salesCount = those units. */
export async function assertStockConserved(
  t: ExecutionContext,
  db: Knex,
  initial: Map<number, number>,
): Promise<void> {
  const units = (await db('order_items')
    .join('orders', 'orders.id', 'order_items.order_id')
    .whereNot('orders.status', 'CANCELLED')
    .whereIn('order_items.product_id', [...initial.keys()])
    .groupBy('order_items.product_id')
    .select('order_items.product_id as productId')
    .sum({ n: 'order_items.quantity' })) as Array<{ productId: number; n: number | string }>;
  const sold = new Map(units.map((row) => [Number(row.productId), Number(row.n)]));
  for (const [id, stock] of initial) {
    const row = await db('products').where('id', id).first('stock_quantity', 'sales_count');
    t.is(row.stock_quantity + (sold.get(id) ?? 0), stock, `stock + sold = initial for product ${id}`);
    t.is(row.sales_count, sold.get(id) ?? 0, `salesCount of product ${id}`);
  }
}

/** Every order id the clients saw in a 201 exists. */
export async function assertAcknowledgedExist(t: ExecutionContext, db: Knex, ids: number[]): Promise<void> {
  const unique = [...new Set(ids)];
  const found = (await db('orders').whereIn('id', unique).select('id')) as Array<{ id: number }>;
  t.is(found.length, unique.length, 'every acknowledged (201) order is in the database');
}

const SQL_TEXT = /\b(insert into|select\s.+\sfrom|update\s+`?\w+`?\s+set|delete from|values\s*\()/i;

/** No SQL text, no bcrypt hash, none of the given values in a log. */
export function assertNoSecrets(t: ExecutionContext, log: string, values: string[] = []): void {
  t.notRegex(log, SQL_TEXT, 'no SQL text in the log');
  t.notRegex(log, /\$2[aby]\$\d\d\$/, 'no bcrypt hash in the log');
  for (const value of values) t.false(log.includes(value), `the log does not contain ${value}`);
}
