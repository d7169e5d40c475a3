// The image routes' real responses, success and error paths, against what the OpenAPI document says.
import crypto from 'node:crypto';
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct } from '../helpers/factories';
import { loadConformance, type Conformance } from '../docs/openapi-conformance';
import { imageBytes, upload } from './images-fixtures';

let app: TestApp;
let conformance: Conformance;

test.before(async () => {
  app = await startTestApp();
  conformance = await loadConformance(app);
});
test.after.always(async () => {
  await app?.close();
});

const UPLOAD = '/api/v1/products/{productId}/images';
const DELETE = '/api/v1/products/{productId}/images/{imageId}';
const FILE = '/uploads/products/{productId}/{file}';

test('upload, delete and file responses conform to the OpenAPI document', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const other = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id);
  const check = (
    method: string,
    template: string,
    res: Awaited<ReturnType<TestApp['request']>>,
    status: number,
  ) => {
    t.is(res.status, status, `${method} ${template}`);
    conformance.check(t, method, template, res);
  };

  const created = await upload(app, productId, seller.token, [
    { name: 'a.png', data: imageBytes('png') },
    { name: 'b.jpg', data: imageBytes('jpeg') },
  ]);
  check('post', UPLOAD, created, 201);
  check(
    'post',
    UPLOAD,
    await upload(app, productId, seller.token, [{ name: 'x.png', data: Buffer.from('text') }]),
    400,
  );
  check(
    'post',
    UPLOAD,
    await upload(app, productId, undefined, [{ name: 'a.png', data: imageBytes('png') }]),
    401,
  );
  check(
    'post',
    UPLOAD,
    await upload(app, productId, other.token, [{ name: 'a.png', data: imageBytes('png') }]),
    403,
  );
  check(
    'post',
    UPLOAD,
    await upload(app, 99_999_999, seller.token, [{ name: 'a.png', data: imageBytes('png') }]),
    404,
  );
  check(
    'post',
    UPLOAD,
    await upload(app, productId, seller.token, [
      { name: 'big.gif', data: imageBytes('gif', 10 * 1024 * 1024 + 1) },
    ]),
    413,
  );
  check(
    'post',
    UPLOAD,
    await app.request('POST', `/api/v1/products/${productId}/images`, { token: seller.token, body: {} }),
    415,
  );

  const [first, second] = created.body.images;
  const served = await app.request('GET', first.imageUrl);
  check('get', FILE, served, 200);
  check(
    'get',
    FILE,
    await app.request('GET', `/uploads/products/${productId}/${crypto.randomUUID()}.png`),
    404,
  );

  const deleteUrl = (imageId: number) => `/api/v1/products/${productId}/images/${imageId}`;
  check('delete', DELETE, await app.request('DELETE', deleteUrl(first.id), { token: other.token }), 403);
  check('delete', DELETE, await app.request('DELETE', deleteUrl(first.id), { token: seller.token }), 204);
  check('delete', DELETE, await app.request('DELETE', deleteUrl(first.id), { token: seller.token }), 404);
  check('delete', DELETE, await app.request('DELETE', deleteUrl(second.id)), 401);
});
