// Shared helpers of the order tests: a buyer/seller world, a valid order body, polling for async work.
import { createMember, createProduct, type ProductOverrides, type TestMember } from '../helpers/factories';
import type { TestApp } from '../helpers/harness';

export const address = {
  zipCode: '04524',
  address: '1 Market Street',
  addressDetail: 'Apt 2',
  receiverName: 'Kim Buyer',
  receiverPhone: '010-0000-0000',
};

export function orderBody(items: Array<{ productId: number; quantity: number }>) {
  return { orderItems: items, shippingAddress: address };
}

export interface World {
  buyer: TestMember;
  seller: TestMember;
  product(overrides?: ProductOverrides): Promise<number>;
}

export async function world(app: TestApp): Promise<World> {
  const buyer = await createMember(app, 'BUYER');
  const seller = await createMember(app, 'SELLER');
  return { buyer, seller, product: (overrides = {}) => createProduct(app, seller.id, overrides) };
}

export async function productRow(
  app: TestApp,
  id: number,
): Promise<{ stock: number; status: string; salesCount: number }> {
  const row = await app.db('products').where('id', id).first('stock_quantity', 'status', 'sales_count');
  return { stock: row.stock_quantity, status: row.status, salesCount: row.sales_count };
}

export function placeOrder(
  app: TestApp,
  token: string,
  items: Array<{ productId: number; quantity: number }>,
  headers?: Record<string, string>,
) {
  return app.request('POST', '/api/v1/orders', { token, body: orderBody(items), headers });
}

/** Polls `check` until it returns a truthy value (async delivery), or fails after `ms`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  ms = 5000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
