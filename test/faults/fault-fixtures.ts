// Shared pieces of the fault suite: a world of sellers, buyers and stocked products made straight in the
// database, the books that must balance after any fault, and the check that no log carries a secret.
import type { ExecutionContext } from 'ava';
import type { Knex } from 'knex';
import type { createTokenService } from '../../lib/auth/tokens';
import { DB_KIND } from '../helpers/harness';

/** The fault suite needs MariaDB (a TCP proxy in front of a database server); on SQLite it says so. */
export const onMariaDb = DB_KIND === 'mysql';
export const SKIPPED_ON_SQLITE = 'fault suite: runs on MariaDB only (TEST_DB=mysql), skipped on SQLite';

export interface FaultWorld {
  sellers: Array<{ id: number; token: string }>;
  buyers: Array<{ id: number; token: string }>;
  /** product id -> initial stock */
  initial: Map<number, number>;
}

export async function makeWorld(
  db: Knex,
  tokens: ReturnType<typeof createTokenService>,
  options: { buyers: number; products: number; stock: number; passwordHash?: string },
): Promise<FaultWorld> {
  const now = new Date();
  const tag = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const member = async (role: 'BUYER' | 'SELLER', i: number) => {
    const [id] = await db('members').insert({
      email: `${role.toLowerCase()}-${i}-${tag}@faults.test`,
      password_hash: options.passwordHash ?? 'x',
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
  const buyers = await Promise.all(Array.from({ length: options.buyers }, (_, i) => member('BUYER', i)));
  const [categoryId] = await db('categories').insert({
    name: `Faults ${tag}`,
    name_key: `faults ${tag}`,
    parent_key: 0,
    parent_id: null,
    display_order: 0,
    created_at: now,
  });
  const initial = new Map<number, number>();
  for (let i = 0; i < options.products; i++) {
    const [id] = await db('products').insert({
      seller_id: sellers[i % 2].id,
      category_id: categoryId,
      name: `Fault product ${i}`,
      description: null,
      price: '5.00',
      stock_quantity: options.stock,
      status: 'ON_SALE',
      sales_count: 0,
      created_at: now,
      updated_at: now,
    });
    initial.set(Number(id), options.stock);
  }
  return { sellers, buyers, initial };
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
