// Real responses (status and body) of the health, documentation, auth, member, category and product endpoints,
// success and error paths alike, conform to what the OpenAPI document says about them.
import test from 'ava';
import { createCategory, createMember, createProduct, uniq, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { loadConformance, type Conformance } from './openapi-conformance';

let app: TestApp;
let api: Conformance;
let seller: TestMember;
let buyer: TestMember;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  api = await loadConformance(app);
  [seller, buyer, admin] = await Promise.all([
    createMember(app, 'SELLER'),
    createMember(app, 'BUYER'),
    createMember(app, 'ADMIN'),
  ]);
});
test.after.always(async () => {
  await app?.close();
});

test('health, the OpenAPI document and the documentation pages', async (t) => {
  const live = await app.request('GET', '/health/live');
  t.is(live.status, 200);
  api.check(t, 'get', '/health/live', live);
  const ready = await app.request('GET', '/health/ready');
  t.is(ready.status, 200);
  api.check(t, 'get', '/health/ready', ready);
  const openapi = await app.request('GET', '/api/v1/openapi.json');
  t.is(openapi.status, 200);
  api.check(t, 'get', '/api/v1/openapi.json', openapi);
  for (const path of ['/docs', '/docs/order-lifecycle']) {
    const res = await app.request('GET', path);
    t.is(res.status, 200);
    api.check(t, 'get', path, res);
  }
  const css = await app.request('GET', '/docs/assets/swagger-ui.css');
  t.is(css.status, 200);
  t.is(css.headers.get('content-type'), 'text/css; charset=utf-8');
  api.check(t, 'get', '/docs/assets/{file}', css);
  const missing = await app.request('GET', '/docs/assets/package.json');
  t.is(missing.status, 404);
  t.is(missing.body.code, 'NOT_FOUND');
  api.check(t, 'get', '/docs/assets/{file}', missing);
  // Documentation, like health, ignores an Authorization header (a stale token never hides the docs).
  for (const [path, template] of [
    ['/api/v1/openapi.json', '/api/v1/openapi.json'],
    ['/docs', '/docs'],
    ['/docs/order-lifecycle', '/docs/order-lifecycle'],
    ['/docs/assets/swagger-ui.css', '/docs/assets/{file}'],
  ]) {
    const res = await app.request('GET', path, { token: 'not-a-jwt' });
    t.is(res.status, 200, path);
    api.check(t, 'get', template, res);
  }
});

test('error bodies: 401 without a token, 401 with a bad token, 403 for the wrong role, 400 validation', async (t) => {
  const noToken = await app.request('GET', '/api/v1/members/me');
  t.is(noToken.status, 401);
  t.is(noToken.body.code, 'UNAUTHENTICATED');
  api.check(t, 'get', '/api/v1/members/me', noToken);

  const badToken = await app.request('GET', '/api/v1/products', { token: 'garbage' });
  t.is(badToken.status, 401);
  t.is(badToken.body.code, 'INVALID_TOKEN');
  api.check(t, 'get', '/api/v1/products', badToken);

  const wrongRole = await app.request('GET', '/api/v1/admin/members', { token: buyer.token });
  t.is(wrongRole.status, 403);
  t.is(wrongRole.body.code, 'FORBIDDEN');
  api.check(t, 'get', '/api/v1/admin/members', wrongRole);

  const invalid = await app.request('POST', '/api/v1/auth/signup', { body: { email: 'nope', extra: 1 } });
  t.is(invalid.status, 400);
  t.is(invalid.body.code, 'VALIDATION_ERROR');
  t.true(invalid.body.errors.length > 0);
  api.check(t, 'post', '/api/v1/auth/signup', invalid);

  const notJson = await app.request('POST', '/api/v1/auth/login', {
    raw: 'email=a',
    headers: { 'Content-Type': 'text/plain' },
  });
  t.is(notJson.status, 415);
  api.check(t, 'post', '/api/v1/auth/login', notJson);

  const badId = await app.request('GET', '/api/v1/products/abc');
  t.is(badId.status, 400);
  api.check(t, 'get', '/api/v1/products/{productId}', badId);
});

test('auth and members: signup, login, refresh, me, admin list, duplicate signup', async (t) => {
  const email = `docs-${uniq()}@example.test`;
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    body: { email, password: 'Password-123', name: 'Docs Reader', phone: '010-1234-5678', role: 'BUYER' },
  });
  t.is(signup.status, 201);
  t.is(signup.body.email, email);
  api.check(t, 'post', '/api/v1/auth/signup', signup);

  const duplicate = await app.request('POST', '/api/v1/auth/signup', {
    body: { email, password: 'Password-123', name: 'Docs Reader', phone: '010-1234-5678', role: 'BUYER' },
  });
  t.is(duplicate.status, 409);
  api.check(t, 'post', '/api/v1/auth/signup', duplicate);

  const login = await app.request('POST', '/api/v1/auth/login', { body: { email, password: 'Password-123' } });
  t.is(login.status, 200);
  t.is(login.body.tokenType, 'Bearer');
  api.check(t, 'post', '/api/v1/auth/login', login);

  const wrong = await app.request('POST', '/api/v1/auth/login', { body: { email, password: 'Wrong-password-1' } });
  t.is(wrong.status, 401);
  api.check(t, 'post', '/api/v1/auth/login', wrong);

  const refresh = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: login.body.refreshToken },
  });
  t.is(refresh.status, 200);
  api.check(t, 'post', '/api/v1/auth/refresh', refresh);

  const me = await app.request('GET', '/api/v1/members/me', { token: refresh.body.accessToken });
  t.is(me.status, 200);
  t.is(me.body.email, email);
  api.check(t, 'get', '/api/v1/members/me', me);

  const renamed = await app.request('PATCH', '/api/v1/members/me', {
    token: refresh.body.accessToken,
    body: { name: 'Docs Reader II' },
  });
  t.is(renamed.status, 200);
  t.is(renamed.body.name, 'Docs Reader II');
  api.check(t, 'patch', '/api/v1/members/me', renamed);

  const list = await app.request('GET', '/api/v1/admin/members?size=5', { token: admin.token });
  t.is(list.status, 200);
  t.is(list.body.size, 5);
  api.check(t, 'get', '/api/v1/admin/members', list);

  const logout = await app.request('POST', '/api/v1/auth/logout', {
    body: { refreshToken: refresh.body.refreshToken },
  });
  t.is(logout.status, 204);
  api.check(t, 'post', '/api/v1/auth/logout', logout);
});

test('categories and products: create, read, lists, update, delete and their errors', async (t) => {
  const category = await app.request('POST', '/api/v1/admin/categories', {
    token: admin.token,
    body: { name: `Docs ${uniq()}` },
  });
  t.is(category.status, 201);
  api.check(t, 'post', '/api/v1/admin/categories', category);
  const categories = await app.request('GET', '/api/v1/categories');
  t.is(categories.status, 200);
  t.true(categories.body.some((c: { id: number }) => c.id === category.body.id));
  api.check(t, 'get', '/api/v1/categories', categories);

  const created = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId: category.body.id, name: 'Documented lamp', price: 19.99, stockQuantity: 4 },
  });
  t.is(created.status, 201);
  t.is(created.body.price, 19.99);
  api.check(t, 'post', '/api/v1/products', created);
  const productId = created.body.id as number;

  const forbidden = await app.request('POST', '/api/v1/products', {
    token: buyer.token,
    body: { categoryId: category.body.id, name: 'x', price: 1, stockQuantity: 1 },
  });
  t.is(forbidden.status, 403);
  api.check(t, 'post', '/api/v1/products', forbidden);

  const detail = await app.request('GET', `/api/v1/products/${productId}`);
  t.is(detail.status, 200);
  t.is(detail.body.name, 'Documented lamp');
  api.check(t, 'get', '/api/v1/products/{productId}', detail);

  const unknown = await app.request('GET', '/api/v1/products/2147483000');
  t.is(unknown.status, 404);
  api.check(t, 'get', '/api/v1/products/{productId}', unknown);

  await createProduct(app, seller.id, { categoryId: await createCategory(app), salesCount: 3 });
  const page = await app.request('GET', '/api/v1/products?size=2&sort=price,asc');
  t.is(page.status, 200);
  t.true(page.body.content.length > 0);
  api.check(t, 'get', '/api/v1/products', page);
  const cursor = await app.request('GET', '/api/v1/products/cursor?limit=1');
  t.is(cursor.status, 200);
  api.check(t, 'get', '/api/v1/products/cursor', cursor);
  const badCursor = await app.request('GET', '/api/v1/products/cursor?cursor=%%%');
  t.is(badCursor.status, 400);
  api.check(t, 'get', '/api/v1/products/cursor', badCursor);
  const popular = await app.request('GET', '/api/v1/products/popular?limit=5');
  t.is(popular.status, 200);
  t.true(Array.isArray(popular.body));
  api.check(t, 'get', '/api/v1/products/popular', popular);

  const updated = await app.request('PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { stockQuantity: 7 },
  });
  t.is(updated.status, 200);
  t.is(updated.body.stockQuantity, 7);
  api.check(t, 'patch', '/api/v1/products/{productId}', updated);

  const deleted = await app.request('DELETE', `/api/v1/products/${productId}`, { token: seller.token });
  t.is(deleted.status, 204);
  api.check(t, 'delete', '/api/v1/products/{productId}', deleted);
});
