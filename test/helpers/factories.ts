// Factories: each test makes its own data, straight through the database (fast, independent of the
// endpoints under test), and gets tokens signed by the app's own token service. They write to a TestApp, or
// to a database with the token service of a service under test that runs elsewhere (a server process).
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Role } from '../../lib/config';
import { hashPassword } from '../../lib/auth/passwords';
import type { TokenService } from '../../lib/auth/tokens';
import type { TestApp } from './harness';

export const uniq = () => crypto.randomBytes(5).toString('hex');

export interface TestMember {
  id: number;
  email: string;
  password: string;
  role: Role;
  token: string;
}

/** A database and the token signer and bcrypt cost of the service that reads it. */
export interface DataTarget {
  db: Knex;
  tokens: Pick<TokenService, 'signAccessToken'>;
  bcryptCost: number;
}

const targetOf = (to: TestApp | DataTarget): DataTarget =>
  'bundle' in to ? { db: to.db, tokens: to.bundle.services.tokens, bcryptCost: to.config.bcryptCost } : to;

export async function createMember(
  to: TestApp | DataTarget,
  role: Role = 'BUYER',
  overrides: { email?: string; password?: string } = {},
): Promise<TestMember> {
  const target = targetOf(to);
  const email = overrides.email ?? `${role.toLowerCase()}-${uniq()}@example.test`;
  const password = overrides.password ?? 'Password-123';
  const now = new Date();
  const [id] = await target.db('members').insert({
    email,
    password_hash: await hashPassword(password, target.bcryptCost),
    name: `Test ${role}`,
    phone: '010-1234-5678',
    role,
    business_number: role === 'SELLER' ? '111-22-33333' : null,
    created_at: now,
    updated_at: now,
  });
  const token = target.tokens.signAccessToken({ id, role, tokenVersion: 0 });
  return { id, email, password, role, token };
}

export async function createCategory(
  to: TestApp | DataTarget,
  name = `Category ${uniq()}`,
  parentId: number | null = null,
): Promise<number> {
  const [id] = await targetOf(to)
    .db('categories')
    .insert({
      name,
      name_key: name.toLowerCase(),
      parent_key: parentId ?? 0,
      parent_id: parentId,
      display_order: 0,
      created_at: new Date(),
    });
  return id;
}

export interface ProductOverrides {
  categoryId?: number;
  name?: string;
  price?: string;
  stockQuantity?: number;
  status?: 'DRAFT' | 'ON_SALE' | 'SOLD_OUT' | 'DELETED';
  salesCount?: number;
  createdAt?: Date;
}

export async function createProduct(
  to: TestApp | DataTarget,
  sellerId: number,
  overrides: ProductOverrides = {},
): Promise<number> {
  const categoryId = overrides.categoryId ?? (await createCategory(to));
  const now = overrides.createdAt ?? new Date();
  const [id] = await targetOf(to)
    .db('products')
    .insert({
      seller_id: sellerId,
      category_id: categoryId,
      name: overrides.name ?? `Product ${uniq()}`,
      description: 'A product made by a test',
      price: overrides.price ?? '10.00',
      stock_quantity: overrides.stockQuantity ?? 10,
      status: overrides.status ?? 'ON_SALE',
      sales_count: overrides.salesCount ?? 0,
      created_at: now,
      updated_at: now,
    });
  return id;
}

/** Logs a member in through the real endpoint; throws unless it answers 200. */
export async function login(app: TestApp, member: { email: string; password: string }) {
  const res = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: member.password },
  });
  // A refused login fails the test saying why (status and body), not at the session's first use.
  if (res.status !== 200) throw new Error(`Login of ${member.email} answered ${res.status}: ${res.text}`);
  return res.body as { accessToken: string; refreshToken: string };
}
