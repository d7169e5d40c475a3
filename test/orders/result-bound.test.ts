// The orders writer's bound on its result's JSON size (resultBytesAtMost): in cluster mode the caller sizes its
// NATS messages by it so that the owner's one reply fits the server's limit. It must hold for the largest
// placement the validation lets through: products created through the API with names at their longest, address
// fields at their longest, in characters that take the most bytes, one seller per line.
import test from 'ava';
import { ADDRESS_MAX_CHARS } from '../../lib/orders/order-schemas';
import { createOrderWriter } from '../../lib/orders/order-writer';
import { PRODUCT_NAME_MAX_CHARS } from '../../lib/products/product-schemas';
import { createCategory, createMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

// A control character is escaped to 6 bytes in JSON, the most any character takes; the last one is a letter
// because the validation trims whitespace (a control character is none).
const longest = (length: number) => '\u0001'.repeat(length - 1) + 'x';

test("the largest placement the validation allows stays within the writer's bound", async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const categoryId = await createCategory(app);
  const items = [];
  for (let i = 0; i < 3; i++) {
    const seller = await createMember(app, 'SELLER');
    const created = await app.request('POST', '/api/v1/products', {
      token: seller.token,
      body: { categoryId, name: longest(PRODUCT_NAME_MAX_CHARS), price: 1, stockQuantity: 5 },
    });
    t.is(created.status, 201, created.text);
    items.push({ productId: created.body.id as number, quantity: 1 });
  }
  const shippingAddress = Object.fromEntries(
    Object.entries(ADDRESS_MAX_CHARS).map(([field, max]) => [field, longest(max)]),
  );
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
