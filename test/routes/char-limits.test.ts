// Text limits count characters as API.md, the OpenAPI document's maxLength and MySQL's VARCHAR do: code points, so
// an emoji (two UTF-16 units in JavaScript) is one character. A name of exactly the limit in emoji is stored and
// read back whole on both databases; one more character is 400 VALIDATION_ERROR naming the field.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { createCategory, createMember, createProduct, uniq, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { charCount } from '../../lib/http/validate';

let app: TestApp;
let seller: TestMember;
let buyer: TestMember;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  [seller, buyer, admin] = await Promise.all([
    createMember(app, 'SELLER'),
    createMember(app, 'BUYER'),
    createMember(app, 'ADMIN'),
  ]);
});
test.after.always(async () => {
  await app?.close();
});

/** `n` characters, each outside the Basic Multilingual Plane (two UTF-16 units). */
const emoji = (n: number) => '😀'.repeat(n);

test('charCount counts code points: a pair is one, a lone surrogate is one', (t) => {
  t.is(charCount(''), 0);
  t.is(charCount('abc'), 3);
  t.is(charCount(emoji(3)), 3);
  t.is(charCount('a😀b'), 3);
  t.is(charCount('\uD800x'), 2);
  t.is(charCount('x\uDC00'), 2);
  t.is(charCount('\uD800'), 1);
});

test('a product name of 200 emoji is stored whole; 201 is refused', async (t) => {
  const categoryId = await createCategory(app);
  const create = (name: string) =>
    app.request('POST', '/api/v1/products', {
      token: seller.token,
      body: { categoryId, name, price: 1, stockQuantity: 1 },
    });
  const created = await create(emoji(200));
  t.is(created.status, 201, created.text);
  t.is(created.body.name, emoji(200));
  t.is((await app.request('GET', `/api/v1/products/${created.body.id}`)).body.name, emoji(200));
  const refused = await create(emoji(201));
  assertError(t, refused, 400, 'VALIDATION_ERROR', '/api/v1/products');
  t.deepEqual(refused.body.errors, [{ field: 'name', message: 'name must be at most 200 characters' }]);
});

test('a category name of 100 emoji is stored whole; 101 is refused', async (t) => {
  const create = (name: string) =>
    app.request('POST', '/api/v1/admin/categories', { token: admin.token, body: { name } });
  const created = await create(emoji(100));
  t.is(created.status, 201, created.text);
  t.is(created.body.name, emoji(100));
  const refused = await create(emoji(101));
  assertError(t, refused, 400, 'VALIDATION_ERROR', '/api/v1/admin/categories');
  t.deepEqual(refused.body.errors, [{ field: 'name', message: 'name must be at most 100 characters' }]);
});

test("a member's name of 100 emoji is stored whole; 101 is refused", async (t) => {
  const signup = (name: string) =>
    app.request('POST', '/api/v1/auth/signup', {
      body: {
        email: `chars-${uniq()}@x.test`,
        password: 'Passw0rd!!',
        name,
        phone: '010-1111-2222',
        role: 'BUYER',
      },
    });
  const created = await signup(emoji(100));
  t.is(created.status, 201, created.text);
  t.is(created.body.name, emoji(100));
  const refused = await signup(emoji(101));
  assertError(t, refused, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
  t.deepEqual(refused.body.errors, [{ field: 'name', message: 'name must be at most 100 characters' }]);
});

test("an order's receiverName of 100 emoji is stored whole; 101 is refused", async (t) => {
  const productId = await createProduct(app, seller.id, { stockQuantity: 10 });
  const order = (receiverName: string) =>
    app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: {
        orderItems: [{ productId, quantity: 1 }],
        shippingAddress: {
          zipCode: '06236',
          address: '123 Teheran-ro',
          addressDetail: '',
          receiverName,
          receiverPhone: '010-1234-5678',
        },
      },
    });
  const placed = await order(emoji(100));
  t.is(placed.status, 201, placed.text);
  t.is(placed.body.orders[0].shippingAddress.receiverName, emoji(100));
  const read = await app.request('GET', `/api/v1/orders/${placed.body.orders[0].id}`, { token: buyer.token });
  t.is(read.body.shippingAddress.receiverName, emoji(100));
  const refused = await order(emoji(101));
  assertError(t, refused, 400, 'VALIDATION_ERROR', '/api/v1/orders');
  t.deepEqual(refused.body.errors, [
    {
      field: 'shippingAddress.receiverName',
      message: 'shippingAddress.receiverName must be at most 100 characters',
    },
  ]);
});
