// The spec's cross-origin rules, one test per rule (numbers refer to the spec's list).
import test from 'ava';
import { originMatcher } from '../../lib/http/cors';
import { API_PREFIX } from '../../routes/index';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
let apiGetPath: string;
test.before(async () => {
  app = await startTestApp({
    env: { CORS_ORIGINS: 'https://app.example.com,https://*.shop.test,http://localhost:5173' },
  });
  // Any real GET route under /api/v1 without path parameters (taken from the route table itself).
  const api = app.bundle.routes.find((group) => group.prefix === API_PREFIX);
  const route = api?.routes.find((r) => r.method === 'get' && !r.path.includes(':'));
  if (!route) throw new Error('no parameterless GET route under /api/v1 to test CORS on');
  apiGetPath = API_PREFIX + route.path;
});
test.after.always(async () => {
  await app?.close();
});

const preflight = (origin: string, extra: Record<string, string> = {}) => ({
  headers: {
    Origin: origin,
    'Access-Control-Request-Method': 'POST',
    'Access-Control-Request-Headers': 'authorization,content-type',
    ...extra,
  },
});

const corsHeaders = (headers: Headers) =>
  [...headers.keys()].filter((name) => name.startsWith('access-control-'));

test('rule 3/4/5: preflight from an allowed origin -> 204 with the concrete origin, methods, headers, max-age, credentials', async (t) => {
  const res = await app.request('OPTIONS', `${API_PREFIX}/orders`, preflight('https://app.example.com'));
  t.is(res.status, 204);
  t.is(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
  t.is(res.headers.get('access-control-allow-methods'), 'GET,POST,PUT,DELETE,PATCH');
  const allowHeaders = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(',');
  for (const header of ['authorization', 'content-type', 'idempotency-key', 'x-request-id'])
    t.true(allowHeaders.includes(header), header);
  t.is(res.headers.get('access-control-max-age'), '3600');
  t.is(res.headers.get('access-control-allow-credentials'), 'true');
  t.is(res.text, '');
});

test('rule 2/8: preflights are answered before routing and authentication (never 401/403/404/405)', async (t) => {
  for (const path of [
    `${API_PREFIX}/members/me`,
    `${API_PREFIX}/admin/members`,
    `${API_PREFIX}/no-such-thing`,
    apiGetPath,
  ]) {
    const res = await app.request('OPTIONS', path, preflight('https://app.example.com'));
    t.is(res.status, 204, path);
    t.is(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
  }
});

test('rule 6: wildcard subdomain patterns echo the concrete requesting origin', async (t) => {
  for (const origin of ['https://a.shop.test', 'https://deep.sub.shop.test']) {
    const res = await app.request('OPTIONS', apiGetPath, preflight(origin));
    t.is(res.status, 204);
    t.is(res.headers.get('access-control-allow-origin'), origin);
  }
  for (const origin of [
    'https://shop.test',
    'https://a.shop.test.evil.com',
    'http://a.shop.test',
    'https://a-shop.test',
  ]) {
    const res = await app.request('OPTIONS', apiGetPath, preflight(origin));
    t.is(res.status, 204, origin);
    t.deepEqual(corsHeaders(res.headers), [], origin);
  }
});

test('a preflight asking to send If-None-Match (the ETag revalidation the document offers) is allowed', async (t) => {
  const res = await app.request('OPTIONS', `${API_PREFIX}/products`, {
    headers: {
      Origin: 'https://app.example.com',
      'Access-Control-Request-Method': 'GET',
      'Access-Control-Request-Headers': 'if-none-match',
    },
  });
  t.is(res.status, 204);
  t.is(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
  const allowHeaders = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(',');
  t.true(allowHeaders.includes('if-none-match'), allowHeaders.join(','));
});

test('a cross-origin replay of POST /orders exposes Idempotent-Replayed to the page', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
  const order = () =>
    app.request('POST', `${API_PREFIX}/orders`, {
      token: buyer.token,
      headers: { Origin: 'https://app.example.com', 'Idempotency-Key': `cors-${productId}` },
      body: {
        orderItems: [{ productId, quantity: 1 }],
        shippingAddress: {
          zipCode: '04524',
          address: '1 Sejong-daero',
          addressDetail: '',
          receiverName: 'Cors Buyer',
          receiverPhone: '010-0000-0000',
        },
      },
    });
  const first = await order();
  t.is(first.status, 201, first.text);
  t.is(first.headers.get('idempotent-replayed'), null);
  const replay = await order();
  t.is(replay.status, 201, replay.text);
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.deepEqual(replay.body, first.body);
  t.is(replay.headers.get('access-control-allow-origin'), 'https://app.example.com');
  const exposed = (replay.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(',');
  t.true(exposed.includes('idempotent-replayed'), exposed.join(','));
});

test('rule 7: a preflight from a disallowed origin -> 204 with no Access-Control-Allow-* header', async (t) => {
  const res = await app.request('OPTIONS', `${API_PREFIX}/orders`, preflight('https://evil.example.org'));
  t.is(res.status, 204);
  t.deepEqual(corsHeaders(res.headers), []);
});

test('rule 5/7: actual requests from an allowed origin carry CORS headers, also on errors', async (t) => {
  const ok = await app.request('GET', apiGetPath, { headers: { Origin: 'http://localhost:5173' } });
  t.is(ok.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  t.is(ok.headers.get('access-control-allow-credentials'), 'true');
  t.true((ok.headers.get('access-control-expose-headers') ?? '').includes('X-Request-Id'));
  t.true((ok.headers.get('vary') ?? '').includes('Origin'));

  const missing = await app.request('GET', `${API_PREFIX}/no-such-thing`, {
    headers: { Origin: 'http://localhost:5173' },
  });
  t.is(missing.status, 404);
  t.is(missing.body.code, 'NOT_FOUND');
  t.is(missing.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  t.is(missing.headers.get('access-control-allow-credentials'), 'true');
});

test('rule 7: actual requests from a disallowed origin get no CORS headers', async (t) => {
  const res = await app.request('GET', apiGetPath, { headers: { Origin: 'https://evil.example.org' } });
  t.deepEqual(corsHeaders(res.headers), []);
});

test('rule 9: OPTIONS without the preflight headers is an ordinary request -> 405 with Allow', async (t) => {
  const withOriginOnly = await app.request('OPTIONS', apiGetPath, {
    headers: { Origin: 'https://app.example.com' },
  });
  t.is(withOriginOnly.status, 405);
  t.is(withOriginOnly.body.code, 'METHOD_NOT_ALLOWED');
  t.true((withOriginOnly.headers.get('allow') ?? '').includes('GET'));
  // An ordinary request: the allowed origin gets its CORS headers on the 405 too.
  t.is(withOriginOnly.headers.get('access-control-allow-origin'), 'https://app.example.com');
  t.is(withOriginOnly.headers.get('access-control-allow-credentials'), 'true');
  const fromOther = await app.request('OPTIONS', apiGetPath, {
    headers: { Origin: 'https://evil.example.org' },
  });
  t.is(fromOther.status, 405);
  t.deepEqual(corsHeaders(fromOther.headers), []);
  const bare = await app.request('OPTIONS', apiGetPath);
  t.is(bare.status, 405);
  t.true((bare.headers.get('allow') ?? '').includes('GET'));
});

test('rule 10: requests that are not cross-origin are not affected', async (t) => {
  const res = await app.request('GET', apiGetPath);
  t.deepEqual(corsHeaders(res.headers), []);
});

test('CORS applies to /api/ paths only', async (t) => {
  const res = await app.request('GET', '/health/live', { headers: { Origin: 'https://app.example.com' } });
  t.is(res.status, 200);
  t.deepEqual(corsHeaders(res.headers), []);
});

test('originMatcher: exact entries are case-insensitive, wildcards need a subdomain', (t) => {
  const match = originMatcher(['https://App.Example.com', 'https://*.example.org:8443']);
  t.true(match('https://app.example.com'));
  t.true(match('https://x.example.org:8443'));
  t.false(match('https://x.example.org'));
  t.false(match('https://example.org:8443'));
  t.false(match('https://x.example.org:8443.evil'));
});
