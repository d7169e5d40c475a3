// Shared pieces of the fault suite: the service behind a TCP proxy in front of its own MariaDB database, a
// world of sellers, buyers and stocked products made straight in the database, and the check that no log
// carries a secret. The books that must balance after any fault are in test/helpers/books.ts.
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

/**
 * Small database bounds so the fault tests are quick (the defaults are 5 s each): a connection 1 s, a pool acquire
 * 2 s, a statement 1 s on the server and 2 s on the client (+1 s grace).
 */
export const SMALL_DB_TIMEOUTS = {
  DB_CONNECT_TIMEOUT_MS: '1000',
  DB_ACQUIRE_TIMEOUT_MS: '2000',
  DB_STATEMENT_TIMEOUT_MS: '1000',
};

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

const SQL_TEXT = /\b(insert into|select\s.+\sfrom|update\s+`?\w+`?\s+set|delete from|values\s*\()/i;

/** No SQL text, no bcrypt hash, none of the given values in a log. */
export function assertNoSecrets(t: ExecutionContext, log: string, values: string[] = []): void {
  t.notRegex(log, SQL_TEXT, 'no SQL text in the log');
  t.notRegex(log, /\$2[aby]\$\d\d\$/, 'no bcrypt hash in the log');
  for (const value of values) t.false(log.includes(value), `the log does not contain ${value}`);
}
