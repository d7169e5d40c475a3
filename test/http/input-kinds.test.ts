// Input never yields a 500: a JSON value of the wrong kind in any scalar field of any route's body (an object
// with its own toString/valueOf, an array, a nested object) is 400 VALIDATION_ERROR naming that field, on
// every route that has a body, anonymous callers included, and nothing is logged at ERROR.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { address } from '../orders/order-fixtures';

let app: TestApp;
let admin: TestMember;
let seller: TestMember;
let buyer: TestMember;
let categoryId: number;
let productId: number;

test.before(async () => {
  app = await startTestApp({ logLevel: 'error' });
  admin = await createMember(app, 'ADMIN');
  seller = await createMember(app, 'SELLER');
  buyer = await createMember(app, 'BUYER');
  categoryId = await createCategory(app);
  productId = await createProduct(app, seller.id, { categoryId });
});
test.after.always(async () => {
  await app?.close();
});

const WRONG_KINDS: unknown[] = [
  { toString: 1 },
  { valueOf: 1 },
  { toString: 'x', valueOf: 'y' },
  [1],
  ['a', 'b'],
  { nested: { deeper: 1 } },
  {},
];

interface Case {
  route: string;
  method: string;
  path: () => string;
  token?: () => string;
  /** A body every field of which is schema-valid, so the one broken field is the only error. */
  valid: () => Record<string, unknown>;
  /** Paths of the scalar fields (dots and [i] as in the error's `field`). */
  fields: string[];
}

const CASES: Case[] = [
  {
    route: 'signup',
    method: 'POST',
    path: () => '/api/v1/auth/signup',
    valid: () => ({
      email: 'kinds@example.test',
      password: 'Password-123',
      name: 'Kinds',
      phone: '010-1234-5678',
      role: 'BUYER',
      businessNumber: null,
    }),
    fields: ['email', 'password', 'name', 'phone', 'role', 'businessNumber'],
  },
  {
    route: 'login',
    method: 'POST',
    path: () => '/api/v1/auth/login',
    valid: () => ({ email: 'kinds@example.test', password: 'x' }),
    fields: ['email', 'password'],
  },
  {
    route: 'refresh',
    method: 'POST',
    path: () => '/api/v1/auth/refresh',
    valid: () => ({ refreshToken: 'x' }),
    fields: ['refreshToken'],
  },
  {
    route: 'logout',
    method: 'POST',
    path: () => '/api/v1/auth/logout',
    valid: () => ({ refreshToken: 'x' }),
    fields: ['refreshToken'],
  },
  {
    route: 'PATCH members/me',
    method: 'PATCH',
    path: () => '/api/v1/members/me',
    token: () => buyer.token,
    valid: () => ({ name: 'Name' }),
    fields: ['name', 'phone', 'businessNumber', 'password', 'currentPassword'],
  },
  {
    route: 'POST admin/categories',
    method: 'POST',
    path: () => '/api/v1/admin/categories',
    token: () => admin.token,
    valid: () => ({ name: 'Kinds', parentId: null, displayOrder: 0 }),
    fields: ['name', 'parentId', 'displayOrder'],
  },
  {
    route: 'POST products',
    method: 'POST',
    path: () => '/api/v1/products',
    token: () => seller.token,
    valid: () => ({
      categoryId,
      name: 'Kinds',
      description: 'd',
      price: 10,
      stockQuantity: 1,
      status: 'ON_SALE',
    }),
    fields: ['categoryId', 'name', 'description', 'price', 'stockQuantity', 'status'],
  },
  {
    route: 'PATCH products',
    method: 'PATCH',
    path: () => `/api/v1/products/${productId}`,
    token: () => seller.token,
    valid: () => ({
      categoryId,
      name: 'Kinds',
      description: 'd',
      price: 10,
      stockQuantity: 1,
      status: 'ON_SALE',
    }),
    fields: ['categoryId', 'name', 'description', 'price', 'stockQuantity', 'status'],
  },
  {
    route: 'POST orders',
    method: 'POST',
    path: () => '/api/v1/orders',
    token: () => buyer.token,
    valid: () => ({ orderItems: [{ productId, quantity: 1 }], shippingAddress: { ...address } }),
    fields: [
      'orderItems[0].productId',
      'orderItems[0].quantity',
      'shippingAddress.zipCode',
      'shippingAddress.address',
      'shippingAddress.addressDetail',
      'shippingAddress.receiverName',
      'shippingAddress.receiverPhone',
    ],
  },
  {
    route: 'PATCH seller order status',
    method: 'PATCH',
    path: () => '/api/v1/sellers/orders/1/status',
    token: () => seller.token,
    valid: () => ({ status: 'CONFIRMED' }),
    fields: ['status'],
  },
];

/** Sets `field` (`a.b`, `a[0].b`) inside `body` to `value`. */
function setField(body: Record<string, unknown>, field: string, value: unknown): void {
  const keys = field.split(/\.|\[(\d+)\]\.?/).filter((k) => k !== undefined && k !== '');
  let target: any = body;
  for (const key of keys.slice(0, -1)) target = target[key];
  target[keys[keys.length - 1]] = value;
}

for (const c of CASES) {
  test(`${c.route}: a wrong kind of value in any field is 400 naming it`, async (t) => {
    for (const field of c.fields) {
      for (const wrong of WRONG_KINDS) {
        const body = c.valid();
        setField(body, field, wrong);
        const label = `${field} = ${JSON.stringify(wrong)}`;
        const res = await app.request(c.method, c.path(), { body, token: c.token?.() });
        assertError(t, res, 400, 'VALIDATION_ERROR', c.path());
        t.deepEqual(
          res.body.errors?.map((e: { field: string }) => e.field),
          [field],
          label,
        );
        t.regex(res.body.errors?.[0]?.message ?? '', /must be/, label);
      }
    }
    t.deepEqual(
      app.logs.lines.filter((line) => /\[(ERROR|FATAL)\]/.test(line)),
      [],
      'no ERROR line in the log',
    );
  });
}

test('the example of issue 15: {"email":{"toString":1}} to login, anonymous', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/login', {
    raw: '{"email":{"toString":1},"password":"x"}',
    headers: { 'Content-Type': 'application/json' },
  });
  assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/auth/login');
  t.deepEqual(res.body.errors, [{ field: 'email', message: 'email must be a string' }]);
});

test('orderItems that is no array is 400 saying so, in its own words', async (t) => {
  for (const orderItems of [{ productId, quantity: 1 }, 'x', 1]) {
    const res = await app.request('POST', '/api/v1/orders', {
      body: { orderItems, shippingAddress: { ...address } },
      token: buyer.token,
    });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/orders');
    t.deepEqual(res.body.errors, [{ field: 'orderItems', message: 'orderItems must be an array' }]);
  }
});

test('every wrong field is named at once, next to the ordinary errors', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/signup', {
    body: { email: ['a'], password: { valueOf: 1 }, name: 'N', phone: '1', role: 'BUYER' },
  });
  assertError(t, res, 400, 'VALIDATION_ERROR');
  t.deepEqual(res.body.errors.map((e: { field: string }) => e.field).sort(), ['email', 'password', 'phone']);
});
