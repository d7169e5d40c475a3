// Shared by the order benchmarks: the world they order in, inserted straight into the database: one seller, one
// buyer per connection (tokens signed with the service's own signer), one hot product and `spreadProducts`
// more, each with a stock no run can exhaust (every order should succeed), and the address they ship to. The
// seller's token lets a sell-out phase set a stock the way a seller does (bench/lib/sell-out.ts).
import type { Knex } from 'knex';
import type { TokenService } from '../../lib/auth/tokens';

export const BIG_STOCK = 100_000_000;

export const address = {
  zipCode: '00000',
  address: 'Bench road 1',
  addressDetail: '',
  receiverName: 'Bench',
  receiverPhone: '000',
};

export interface OrderWorld {
  /** One access token per buyer. */
  tokens: string[];
  /** The one seller of every product, and an access token of theirs. */
  seller: { id: number; token: string };
  hot: number;
  spread: number[];
  /** Every product's initial stock (the books check compares against it). */
  initial: Map<number, number>;
}

export async function seedOrderWorld(
  db: Knex,
  options: { buyers: number; spreadProducts: number; signer: Pick<TokenService, 'signAccessToken'> },
): Promise<OrderWorld> {
  const now = new Date();
  const member = (role: 'BUYER' | 'SELLER', i: number) => ({
    email: `bench-${role.toLowerCase()}-${i}@bench.test`,
    password_hash: 'x',
    name: `Bench ${role}`,
    phone: '0',
    role,
    business_number: role === 'SELLER' ? '1' : null,
    created_at: now,
    updated_at: now,
  });
  await db('members').insert(member('SELLER', 0));
  const seller = await db('members').where('email', 'bench-seller-0@bench.test').first('id');
  await db('members').insert(Array.from({ length: options.buyers }, (_, i) => member('BUYER', i)));
  const buyers = (await db('members').where('role', 'BUYER').orderBy('id').select('id')) as Array<{
    id: number;
  }>;
  await db('categories').insert({
    name: 'Bench',
    name_key: 'bench',
    parent_key: 0,
    parent_id: null,
    display_order: 0,
    created_at: now,
  });
  const category = await db('categories').where('name_key', 'bench').first('id');
  const product = (i: number) => ({
    seller_id: seller.id,
    category_id: category.id,
    name: `Bench product ${i}`,
    description: null,
    price: '9.99',
    stock_quantity: BIG_STOCK,
    status: 'ON_SALE',
    sales_count: 0,
    created_at: now,
    updated_at: now,
  });
  // the hot product (0) and the spread ones, 500 rows per INSERT
  for (let i = 0; i <= options.spreadProducts; i += 500) {
    await db('products').insert(
      Array.from({ length: Math.min(500, options.spreadProducts + 1 - i) }, (_, k) => product(i + k)),
    );
  }
  const ids = ((await db('products').orderBy('id').select('id')) as Array<{ id: number }>).map((r) => r.id);
  return {
    tokens: buyers.map(({ id }) => options.signer.signAccessToken({ id, role: 'BUYER', tokenVersion: 0 })),
    seller: {
      id: seller.id,
      token: options.signer.signAccessToken({ id: seller.id, role: 'SELLER', tokenVersion: 0 }),
    },
    hot: ids[0],
    spread: ids.slice(1),
    initial: new Map(ids.map((id) => [id, BIG_STOCK])),
  };
}
