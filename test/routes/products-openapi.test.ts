// The cached GETs (product detail, popular, categories) document their caching headers in the OpenAPI
// document, and real 200/304 responses send what is documented.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct } from '../helpers/factories';
import { loadConformance, type Conformance } from '../docs/openapi-conformance';

let app: TestApp;
let conformance: Conformance;
test.before(async () => {
  app = await startTestApp();
  conformance = await loadConformance(app);
});
test.after.always(async () => {
  await app?.close();
});

const CACHED = [
  ['/api/v1/products/{productId}', 'public, no-cache'],
  ['/api/v1/products/popular', 'public, max-age=600'],
  ['/api/v1/categories', 'public, no-cache'],
] as const;

test('the three cached GETs document If-None-Match, and ETag + Cache-Control on 200 and 304', (t) => {
  for (const [path, cacheControl] of CACHED) {
    const op = conformance.doc.paths[path].get as any;
    t.like(
      op.parameters.find((p: { name: string }) => p.name === 'If-None-Match'),
      { in: 'header', required: false, schema: { type: 'string' } },
      path,
    );
    for (const status of ['200', '304']) {
      const headers = op.responses[status].headers;
      t.deepEqual(
        Object.keys(headers).sort(),
        ['Cache-Control', 'ETag', 'X-Request-Id'],
        `${path} ${status}`,
      );
      t.like(headers.ETag, { schema: { type: 'string' } });
      t.true(headers['Cache-Control'].description.includes(cacheControl), `${path} ${status}`);
    }
  }
});

test('real 200 and 304 responses of the cached GETs send the documented headers', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id);
  const concrete: Record<string, string> = {
    '/api/v1/products/{productId}': `/api/v1/products/${productId}`,
    '/api/v1/products/popular': '/api/v1/products/popular',
    '/api/v1/categories': '/api/v1/categories',
  };
  for (const [template, cacheControl] of CACHED) {
    const full = await app.request('GET', concrete[template]);
    t.is(full.status, 200, template);
    t.is(full.headers.get('cache-control'), cacheControl, template);
    conformance.check(t, 'GET', template, full);
    const etag = full.headers.get('etag')!;
    const notModified = await app.request('GET', concrete[template], { headers: { 'If-None-Match': etag } });
    t.is(notModified.status, 304, template);
    t.is(notModified.headers.get('etag'), etag, template);
    t.is(notModified.headers.get('cache-control'), cacheControl, template);
    conformance.check(t, 'GET', template, notModified);
  }
});
