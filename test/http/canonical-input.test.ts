// Canonical input (issue 15): integers in paths and queries are plain digits, body integers are JSON numbers,
// nullable fields take the null the service itself shows, and strings with lone UTF-16 surrogates or a NUL
// character are refused.
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

test.before(async () => {
  app = await startTestApp();
  admin = await createMember(app, 'ADMIN');
  seller = await createMember(app, 'SELLER');
  buyer = await createMember(app, 'BUYER');
  categoryId = await createCategory(app);
});
test.after.always(async () => {
  await app?.close();
});

test('path integers are digits only: /products/%201 is 400 for GET and DELETE, and nothing is deleted', async (t) => {
  const productId = await createProduct(app, seller.id, { categoryId });
  for (const raw of ['%20' + productId, productId + '%20', '%09' + productId, '+' + productId, '0x1']) {
    for (const method of ['GET', 'DELETE']) {
      const res = await app.request(method, `/api/v1/products/${raw}`, { token: seller.token });
      assertError(t, res, 400, 'VALIDATION_ERROR');
      t.deepEqual(res.body.errors, [
        { field: 'params.productId', message: 'productId must be a positive integer' },
      ]);
    }
  }
  const row = await app.db('products').where('id', productId).first('status');
  t.is(row.status, 'ON_SALE');
  const ok = await app.request('GET', `/api/v1/products/${productId}`);
  t.is(ok.status, 200);
  t.is(ok.body.id, productId);
});

test('query integers are digits only: ?page=%201 and ?size=5%20 are 400', async (t) => {
  for (const [query, field, message] of [
    ['page=%201', 'query.page', 'page must be an integer >= 0'],
    ['size=5%20', 'query.size', 'size must be an integer between 1 and 100'],
    ['categoryId=%0A1', 'query.categoryId', 'categoryId must be a positive integer'],
  ]) {
    const res = await app.request('GET', `/api/v1/products?${query}`);
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.deepEqual(res.body.errors, [{ field, message }], query);
  }
  const ok = await app.request('GET', '/api/v1/products?page=0&size=5');
  t.is(ok.status, 200);
  t.is(ok.body.size, 5);
});

test('body integers are JSON numbers only: "1" is 400', async (t) => {
  const product = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId: String(categoryId), name: 'P', price: 1, stockQuantity: 1 },
  });
  assertError(t, product, 400, 'VALIDATION_ERROR');
  t.deepEqual(product.body.errors, [
    { field: 'categoryId', message: 'categoryId must be a positive integer' },
  ]);

  const category = await app.request('POST', '/api/v1/admin/categories', {
    token: admin.token,
    body: { name: 'Strings', parentId: String(categoryId) },
  });
  assertError(t, category, 400, 'VALIDATION_ERROR');
  t.deepEqual(category.body.errors, [{ field: 'parentId', message: 'parentId must be a positive integer' }]);

  const productId = await createProduct(app, seller.id, { categoryId });
  const order = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId: String(productId), quantity: 1 }], shippingAddress: address },
  });
  assertError(t, order, 400, 'VALIDATION_ERROR');
  t.deepEqual(order.body.errors, [
    { field: 'orderItems[0].productId', message: 'orderItems[0].productId must be a positive integer' },
  ]);
  const patch = await app.request('PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { categoryId: ` ${categoryId}` },
  });
  assertError(t, patch, 400, 'VALIDATION_ERROR');
  t.deepEqual(patch.body.errors, [{ field: 'categoryId', message: 'categoryId must be a positive integer' }]);
});

test('POST /admin/categories accepts "parentId": null (a top-level category)', async (t) => {
  const res = await app.request('POST', '/api/v1/admin/categories', {
    token: admin.token,
    body: { name: 'Top level by null', parentId: null },
  });
  t.is(res.status, 201, res.text);
  t.like(res.body, { name: 'Top level by null', parentId: null, displayOrder: 0 });
  t.true(Number.isInteger(res.body.id));
});

test('PATCH /members/me accepts the businessNumber: null that GET /members/me shows a buyer', async (t) => {
  const me = await app.request('GET', '/api/v1/members/me', { token: buyer.token });
  t.is(me.status, 200);
  t.is(me.body.businessNumber, null);
  const res = await app.request('PATCH', '/api/v1/members/me', {
    token: buyer.token,
    body: { name: 'Renamed Buyer', businessNumber: me.body.businessNumber },
  });
  t.is(res.status, 200, res.text);
  t.like(res.body, { id: buyer.id, name: 'Renamed Buyer', businessNumber: null, role: 'BUYER' });
  // A value is still a seller's only.
  const refused = await app.request('PATCH', '/api/v1/members/me', {
    token: buyer.token,
    body: { businessNumber: '123-45-67890' },
  });
  assertError(t, refused, 400, 'VALIDATION_ERROR');
  t.deepEqual(refused.body.errors, [
    { field: 'businessNumber', message: 'businessNumber is only for sellers' },
  ]);
});

test('lone UTF-16 surrogates are refused in any string field; a real pair is kept', async (t) => {
  const lone = ['a\ud800b', '\udfff', 'x\udc00\ud800'];
  for (const name of lone) {
    const res = await app.request('POST', '/api/v1/products', {
      token: seller.token,
      body: { categoryId, name, price: 1, stockQuantity: 1 },
    });
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.deepEqual(res.body.errors, [
      { field: 'name', message: 'name must not contain lone UTF-16 surrogates' },
    ]);
  }
  const order = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: {
      orderItems: [{ productId: await createProduct(app, seller.id, { categoryId }), quantity: 1 }],
      shippingAddress: { ...address, receiverName: 'Kim \ud83d' },
    },
  });
  assertError(t, order, 400, 'VALIDATION_ERROR');
  t.deepEqual(order.body.errors, [
    {
      field: 'shippingAddress.receiverName',
      message: 'shippingAddress.receiverName must not contain lone UTF-16 surrogates',
    },
  ]);
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    body: {
      email: 'lone@example.test',
      password: 'Password-\udbff',
      name: 'N',
      phone: '010-1234-5678',
      role: 'BUYER',
    },
  });
  assertError(t, signup, 400, 'VALIDATION_ERROR');
  t.deepEqual(signup.body.errors, [
    { field: 'password', message: 'password must not contain lone UTF-16 surrogates' },
  ]);

  const ok = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId, name: 'Smile \ud83d\ude00', price: 1, stockQuantity: 1 },
  });
  t.is(ok.status, 201, ok.text);
  t.is(ok.body.name, 'Smile 😀');
  const stored = await app.request('GET', `/api/v1/products/${ok.body.id}`);
  t.is(stored.body.name, 'Smile 😀');
});

test('a NUL character is refused in any string: body, query and password alike, nothing written', async (t) => {
  const product = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId, name: 'Lamp\u0000 shade', price: 1, stockQuantity: 1 },
  });
  assertError(t, product, 400, 'VALIDATION_ERROR', '/api/v1/products');
  t.deepEqual(product.body.errors, [
    { field: 'name', message: 'name must not contain the NUL character (U+0000)' },
  ]);
  t.is(await app.db('products').where('name', 'like', 'Lamp%').first(), undefined);
  // SQLite's full-text search failed on it (a 500) and its LIKE matched on the part before it.
  for (const list of ['/api/v1/products', '/api/v1/products/cursor']) {
    const res = await app.request('GET', `${list}?keyword=ab%00cd`);
    assertError(t, res, 400, 'VALIDATION_ERROR', list);
    t.deepEqual(res.body.errors, [
      { field: 'query.keyword', message: 'keyword must not contain the NUL character (U+0000)' },
    ]);
  }
  // bcrypt would check the password only up to the NUL.
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    body: {
      email: 'nul@example.test',
      password: 'Password-1\u0000x',
      name: 'N',
      phone: '010-1234-5678',
      role: 'BUYER',
    },
  });
  assertError(t, signup, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
  t.deepEqual(signup.body.errors, [
    { field: 'password', message: 'password must not contain the NUL character (U+0000)' },
  ]);
  t.is(await app.db('members').where('email', 'nul@example.test').first(), undefined);
});
