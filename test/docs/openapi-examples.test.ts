// The document's request examples work as sent against a freshly started service with the demo seed (what
// Swagger UI's "Try it out" sends), with the demo account of the operation's role authorized.
import test from 'ava';
import type { OpenApiDocument } from '../../lib/openapi/openapi-document';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
let doc: OpenApiDocument;
test.before(async () => {
  app = await startTestApp({ env: { SEED_ON_START: 'true' } });
  doc = (await app.request('GET', '/api/v1/openapi.json')).body;
});
test.after.always(async () => {
  await app?.close();
});

const DEMO = {
  BUYER: { email: 'buyer@marketplace.test', password: 'Buyer123!' },
  SELLER: { email: 'seller@marketplace.test', password: 'Seller123!' },
  ADMIN: { email: 'admin@marketplace.test', password: 'Admin123!' },
};
// An order must exist before a seller moves it and a buyer cancels it.
const ORDER = [
  'post /api/v1/orders',
  'patch /api/v1/sellers/orders/{orderId}/status',
  'post /api/v1/orders/{orderId}/cancel',
];
// A refresh token cannot be an example that works: it is issued by a login and used up by its first use.
const NEEDS_A_LIVE_TOKEN = ['post /api/v1/auth/refresh', 'post /api/v1/auth/logout'];

test('every JSON request example succeeds as sent on a fresh demo service', async (t) => {
  const tokens: Record<string, string> = {};
  for (const [role, credentials] of Object.entries(DEMO)) {
    tokens[role] = (await app.request('POST', '/api/v1/auth/login', { body: credentials })).body.accessToken;
  }
  const operations = Object.entries(doc.paths)
    .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ key: `${method} ${path}`, path, method, op })))
    .filter(({ key, op }) => op.requestBody?.content['application/json']?.example !== undefined && !NEEDS_A_LIVE_TOKEN.includes(key))
    .sort((a, b) => ORDER.indexOf(a.key) - ORDER.indexOf(b.key));
  t.true(operations.length >= 8, operations.map((o) => o.key).join(', '));
  for (const { key, path, method, op } of operations) {
    const role = op['x-auth'] === 'public' ? null : op['x-auth'] === 'any' ? 'BUYER' : (op['x-auth'] as string[])[0];
    const concrete = path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const param = op.parameters?.find((p) => p.name === name);
      t.not(param?.example, undefined, `${key}: path parameter ${name} has an example`);
      return String(param?.example);
    });
    const res = await app.request(method.toUpperCase(), concrete, {
      body: op.requestBody!.content['application/json'].example,
      token: role ? tokens[role] : undefined,
    });
    t.true(res.status >= 200 && res.status < 300, `${key} -> ${res.status} ${res.text}`);
  }
});
