// The orders writer's bound on its result's JSON size (resultBytesAtMost): in cluster mode the caller sizes its
// NATS messages by it so that the owner's one reply fits the server's limit. It must hold for the largest
// placement the validation lets through: names and address fields at their longest, in characters that take
// the most bytes, one seller per line.
import test from 'ava';
import { createOrderWriter } from '../../lib/orders/order-writer';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test("the largest placement the validation allows stays within the writer's bound", async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const items = [];
  for (let i = 0; i < 3; i++) {
    const seller = await createMember(app, 'SELLER');
    // '가' takes 3 bytes of UTF-8; the address's control characters are escaped to 6 bytes each in JSON.
    const productId = await createProduct(app, seller.id, {
      name: `${i}${'가'.repeat(199)}`,
      stockQuantity: 5,
    });
    items.push({ productId, quantity: 1 });
  }
  const longest = (length: number) => '\u0001'.repeat(length - 1) + 'x';
  const shippingAddress = {
    zipCode: longest(20),
    address: longest(255),
    addressDetail: longest(255),
    receiverName: longest(100),
    receiverPhone: longest(30),
  };
  const res = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: items, shippingAddress },
  });
  t.is(res.status, 201, res.text);
  t.is(res.body.orders.length, 3, 'one order per seller');
  const bytes = Buffer.byteLength(JSON.stringify(res.body.orders));
  const bound = createOrderWriter().resultBytesAtMost!({ items, details: null as never });
  t.true(bytes <= bound, `${bytes} bytes against a bound of ${bound}`);
  t.true(bytes > bound / 2, `the bound is not wildly loose: ${bytes} of ${bound}`);
});
