// The request limits of order placement, each tested exactly at and just past its edge: the number of order
// lines (MAX_ORDER_LINES), a productId at the top of a signed 32-bit integer (one more is a clean 400 before any
// query, not a 500), the Idempotency-Key's characters, and the longest receiverPhone. A refusal is
// 400 VALIDATION_ERROR naming the field, and writes nothing.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { ADDRESS_MAX_CHARS, MAX_ORDER_LINES } from '../../lib/orders/order-schemas';
import { address, orderBody, placeOrder, productRow } from '../orders/order-fixtures';

const INT_MAX = 2_147_483_647;
let app: TestApp;
let seller: TestMember;

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
});
test.after.always(async () => {
  await app?.close();
});

const ordersOf = async (buyerId: number) =>
  Number((await app.db('orders').where('buyer_id', buyerId).count({ n: '*' }).first())!.n);

/** `count` ON_SALE products of the seller, 10 in stock each. */
async function products(count: number): Promise<number[]> {
  const categoryId = await createCategory(app);
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push(await createProduct(app, seller.id, { categoryId }));
  return ids;
}

test(`an order of ${MAX_ORDER_LINES} lines is placed; ${MAX_ORDER_LINES + 1} lines are 400 naming orderItems, nothing written`, async (t) => {
  t.is(MAX_ORDER_LINES, 100);
  const buyer = await createMember(app, 'BUYER');
  const ids = await products(MAX_ORDER_LINES + 1);
  const atLimit = await placeOrder(
    app,
    buyer.token,
    ids.slice(0, MAX_ORDER_LINES).map((productId) => ({ productId, quantity: 1 })),
  );
  t.is(atLimit.status, 201, atLimit.text);
  t.is(atLimit.body.orders.length, 1);
  t.is(atLimit.body.orders[0].items.length, MAX_ORDER_LINES);

  const over = await placeOrder(
    app,
    buyer.token,
    ids.map((productId) => ({ productId, quantity: 1 })),
  );
  assertError(t, over, 400, 'VALIDATION_ERROR', '/api/v1/orders');
  t.deepEqual(over.body.errors, [
    { field: 'orderItems', message: `orderItems must have at most ${MAX_ORDER_LINES} entries` },
  ]);
  t.is(await ordersOf(buyer.id), 1);
  // The first 100 lost one unit each to the first order; the 101st was never touched.
  t.deepEqual(await productRow(app, ids[MAX_ORDER_LINES - 1]), {
    stock: 9,
    status: 'ON_SALE',
    salesCount: 1,
  });
  t.deepEqual(await productRow(app, ids[MAX_ORDER_LINES]), { stock: 10, status: 'ON_SALE', salesCount: 0 });
});

test('a productId of 2^31 - 1 is an unknown product (404 NOT_FOUND); 2^31 is 400 naming the field, not a 500', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const largest = await placeOrder(app, buyer.token, [{ productId: INT_MAX, quantity: 1 }]);
  assertError(t, largest, 404, 'NOT_FOUND', '/api/v1/orders');
  t.is(largest.body.message, `Product ${INT_MAX} not found`);

  const tooLarge = await placeOrder(app, buyer.token, [{ productId: INT_MAX + 1, quantity: 1 }]);
  assertError(t, tooLarge, 400, 'VALIDATION_ERROR', '/api/v1/orders');
  t.deepEqual(tooLarge.body.errors, [
    { field: 'orderItems[0].productId', message: 'orderItems[0].productId is too large' },
  ]);
  t.is(await ordersOf(buyer.id), 0);
});

test('an Idempotency-Key with a space is 400 naming the header; the same key without it is accepted', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const [productId] = await products(1);
  const spaced = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], {
    'Idempotency-Key': 'order 1',
  });
  assertError(t, spaced, 400, 'VALIDATION_ERROR', '/api/v1/orders');
  t.deepEqual(spaced.body.errors, [
    {
      field: 'headers.Idempotency-Key',
      message: 'Idempotency-Key must be 1-255 visible ASCII characters',
    },
  ]);
  t.is(await ordersOf(buyer.id), 0);
  t.deepEqual(await productRow(app, productId), { stock: 10, status: 'ON_SALE', salesCount: 0 });

  const plain = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }], {
    'Idempotency-Key': 'order-1',
  });
  t.is(plain.status, 201, plain.text);
  t.is(await ordersOf(buyer.id), 1);
});

test(`a receiverPhone of ${ADDRESS_MAX_CHARS.receiverPhone} characters is stored whole; one more is 400 naming it`, async (t) => {
  t.is(ADDRESS_MAX_CHARS.receiverPhone, 30);
  const buyer = await createMember(app, 'BUYER');
  const [productId] = await products(1);
  const order = (receiverPhone: string) =>
    app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { ...orderBody([{ productId, quantity: 1 }]), shippingAddress: { ...address, receiverPhone } },
    });
  const longest = '0'.repeat(30);
  const placed = await order(longest);
  t.is(placed.status, 201, placed.text);
  t.is(placed.body.orders[0].shippingAddress.receiverPhone, longest);
  const read = await app.request('GET', `/api/v1/orders/${placed.body.orders[0].id}`, { token: buyer.token });
  t.is(read.body.shippingAddress.receiverPhone, longest);

  const refused = await order('0'.repeat(31));
  assertError(t, refused, 400, 'VALIDATION_ERROR', '/api/v1/orders');
  t.deepEqual(refused.body.errors, [
    {
      field: 'shippingAddress.receiverPhone',
      message: 'shippingAddress.receiverPhone must be at most 30 characters',
    },
  ]);
  t.deepEqual(await productRow(app, productId), { stock: 9, status: 'ON_SALE', salesCount: 1 });
});
