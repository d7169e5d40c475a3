// Security headers and the reach of CORS: `X-Content-Type-Options: nosniff` on every response (answers, errors,
// 404/405, preflights, images, docs); a Content-Security-Policy with frame-ancestors 'none' on the /docs pages;
// CORS on exactly the paths the router serves under /api/, whatever their case (the router ignores case).
import test from 'ava';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

// A real 1x1 PNG, so the upload stays valid whatever the image checks become.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const ORIGIN = 'http://localhost:3000';

let app: TestApp;
let seller: TestMember;
let imageUrl: string;
test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { categoryId: await createCategory(app) });
  const form = new FormData();
  form.append('images', new Blob([PNG], { type: 'image/png' }), 'dot.png');
  const uploaded = await app.request('POST', `/api/v1/products/${productId}/images`, {
    token: seller.token,
    raw: form,
  });
  if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
  imageUrl = uploaded.body.images[0].imageUrl;
});
test.after.always(async () => {
  await app?.close();
});

const nosniff = (t: import('ava').ExecutionContext, res: ApiResponse, what: string) =>
  t.is(res.headers.get('x-content-type-options'), 'nosniff', what);

test('nosniff on every kind of response', async (t) => {
  const ok = await app.request('GET', '/api/v1/products');
  t.is(ok.status, 200);
  t.true(Array.isArray(ok.body.content));
  nosniff(t, ok, 'a JSON answer');

  const missing = await app.request('GET', '/api/v1/nothing-here');
  assertError(t, missing, 404, 'NOT_FOUND', '/api/v1/nothing-here');
  nosniff(t, missing, '404');

  const wrongMethod = await app.request('PUT', '/api/v1/products');
  assertError(t, wrongMethod, 405, 'METHOD_NOT_ALLOWED', '/api/v1/products');
  nosniff(t, wrongMethod, '405');

  const anonymous = await app.request('GET', '/api/v1/members/me');
  assertError(t, anonymous, 401, 'UNAUTHENTICATED', '/api/v1/members/me');
  nosniff(t, anonymous, '401');

  const badJson = await app.request('POST', '/api/v1/auth/login', {
    raw: '{"email":',
    headers: { 'Content-Type': 'application/json' },
  });
  assertError(t, badJson, 400, 'VALIDATION_ERROR', '/api/v1/auth/login');
  nosniff(t, badJson, 'malformed JSON');

  const preflight = await app.request('OPTIONS', '/api/v1/products', {
    headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'GET' },
  });
  t.is(preflight.status, 204);
  t.is(preflight.headers.get('access-control-allow-origin'), ORIGIN);
  nosniff(t, preflight, 'preflight');

  const image = await fetch(app.url + imageUrl);
  t.is(image.status, 200);
  t.is(image.headers.get('content-type'), 'image/png');
  // Uploads are re-encoded (lib/images/image-processing.ts): the bytes differ, the format stays.
  t.deepEqual(Buffer.from(await image.arrayBuffer()).subarray(0, 8), PNG.subarray(0, 8));
  t.is(image.headers.get('x-content-type-options'), 'nosniff', 'an image');

  const noImage = await app.request('GET', '/uploads/products/1/not-a-file.png');
  assertError(t, noImage, 404, 'NOT_FOUND');
  nosniff(t, noImage, 'a missing image');

  const health = await app.request('GET', '/health/live');
  t.is(health.status, 200);
  nosniff(t, health, 'health');

  const openapi = await app.request('GET', '/api/v1/openapi.json');
  t.is(openapi.body.openapi, '3.1.0');
  nosniff(t, openapi, 'the OpenAPI document');
});

test('the /docs pages: CSP with frame-ancestors none, X-Frame-Options DENY, nosniff', async (t) => {
  for (const path of [
    '/docs',
    '/docs/order-lifecycle',
    '/docs/assets/swagger-ui.css',
    '/DOCS',
    '/Docs/Order-Lifecycle',
  ]) {
    const res = await app.request('GET', path);
    t.is(res.status, 200, path);
    const csp = res.headers.get('content-security-policy') ?? '';
    t.regex(csp, /(^|; )frame-ancestors 'none'(;|$)/, path);
    t.regex(csp, /(^|; )default-src 'none'(;|$)/, path);
    t.regex(csp, /(^|; )script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/, path);
    t.is(res.headers.get('x-frame-options'), 'DENY', path);
    nosniff(t, res, path);
  }
  const page = await app.request('GET', '/docs');
  t.true(page.text.includes('<div id="swagger-ui"></div>'));
  t.true(page.text.includes('<script id="swagger-config" type="application/json">'));
  const missing = await app.request('GET', '/docs/assets/nope.js');
  assertError(t, missing, 404, 'NOT_FOUND', '/docs/assets/nope.js');
  t.regex(missing.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  // The API itself answers JSON and needs no page policy.
  t.is((await app.request('GET', '/api/v1/products')).headers.get('content-security-policy'), null);
});

test('CORS covers /API/V1/... as well: the router serves it, so the allow-list applies', async (t) => {
  const upper = await app.request('GET', '/API/V1/PRODUCTS', { headers: { Origin: ORIGIN } });
  t.is(upper.status, 200, 'the router serves upper-case paths');
  t.true(Array.isArray(upper.body.content));
  t.is(upper.headers.get('access-control-allow-origin'), ORIGIN);
  t.is(upper.headers.get('access-control-allow-credentials'), 'true');

  const preflight = await app.request('OPTIONS', '/Api/V1/Products', {
    headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST' },
  });
  t.is(preflight.status, 204);
  t.is(preflight.text, '');
  t.is(preflight.headers.get('access-control-allow-origin'), ORIGIN);
  t.regex(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);

  // A stranger's preflight to an upper-case path ends in CORS (204, no headers) as it does in lower case,
  // instead of reaching the router (405) or authentication.
  const stranger = await app.request('OPTIONS', '/API/V1/members/me', {
    headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' },
  });
  t.is(stranger.status, 204);
  t.is(stranger.headers.get('access-control-allow-origin'), null);
  const strangerGet = await app.request('GET', '/API/V1/PRODUCTS', {
    headers: { Origin: 'https://evil.example' },
  });
  t.is(strangerGet.status, 200);
  t.is(strangerGet.headers.get('access-control-allow-origin'), null);

  // Paths outside /api/ never get CORS headers, in any case.
  const docs = await app.request('GET', '/DOCS', { headers: { Origin: ORIGIN } });
  t.is(docs.status, 200);
  t.is(docs.headers.get('access-control-allow-origin'), null);
});
