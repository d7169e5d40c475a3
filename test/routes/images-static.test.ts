import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { imageBytes, productDir, upload } from './images-fixtures';

let app: TestApp;
let seller: TestMember;
let productId: number;
let imageUrl: string;
let png: Buffer;
const SECRET = 'top-secret-content';

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  productId = await createProduct(app, seller.id);
  png = imageBytes('png', 4096);
  const res = await upload(app, productId, seller.token, [{ name: 'a.png', data: png }]);
  if (res.status !== 201) throw new Error(`setup upload failed: ${res.status} ${res.text}`);
  imageUrl = res.body.images[0].imageUrl;
  // What is served is what was stored: the re-encoded image, not the uploaded bytes.
  png = fs.readFileSync(path.join(productDir(app, productId), path.basename(imageUrl)));
  // Files that exist on disk but must never be served: outside the product directory, or not a <uuid>.<ext> name.
  fs.writeFileSync(path.join(app.config.uploadDir, 'secret.txt'), SECRET);
  fs.writeFileSync(path.join(app.config.dataDir, 'secret.txt'), SECRET);
  fs.writeFileSync(path.join(productDir(app, productId), 'notes.txt'), SECRET);
  fs.writeFileSync(path.join(productDir(app, productId), `${crypto.randomUUID().toUpperCase()}.png`), SECRET);
});
test.after.always(async () => {
  await app?.close();
});

/** Sends the path exactly as written (fetch would normalise `..` segments away before sending). */
function rawGet(rawPath: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(app.url);
    const req = http.request({ host: url.hostname, port: url.port, path: rawPath, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

test('a stored image is served with its type, length, nosniff and a long cache lifetime', async (t) => {
  const res = await fetch(app.url + imageUrl);
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'image/png');
  t.is(res.headers.get('content-length'), String(png.length));
  t.is(res.headers.get('x-content-type-options'), 'nosniff');
  t.is(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  t.true(Buffer.from(await res.arrayBuffer()).equals(png));
});

test('a query string on an image URL (a cache-busting ?v=) is ignored: the same image', async (t) => {
  const res = await fetch(`${app.url}${imageUrl}?v=2`);
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'image/png');
  t.true(Buffer.from(await res.arrayBuffer()).equals(png));
});

test('HEAD gives the headers without the bytes', async (t) => {
  const res = await fetch(app.url + imageUrl, { method: 'HEAD' });
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'image/png');
  t.is(res.headers.get('content-length'), String(png.length));
  t.is(res.headers.get('x-content-type-options'), 'nosniff');
  t.is((await res.arrayBuffer()).byteLength, 0);
});

test('an unknown <uuid>.<ext> is 404 in the error shape', async (t) => {
  const res = await app.request('GET', `/uploads/products/${productId}/${crypto.randomUUID()}.png`);
  t.is(res.status, 404);
  t.is(res.body.code, 'NOT_FOUND');
  t.is(res.body.status, 404);
  t.is(typeof res.body.requestId, 'string');
  const otherProduct = await app.request(
    'GET',
    imageUrl.replace(`/products/${productId}/`, `/products/${productId + 1000}/`),
  );
  t.is(otherProduct.status, 404);
});

test("a DRAFT product's images stay public by name; once the product is DELETED its files are 404 in the error shape", async (t) => {
  const id = await createProduct(app, seller.id);
  const up = await upload(app, id, seller.token, [{ name: 'd.png', data: imageBytes('png') }]);
  t.is(up.status, 201);
  const url: string = up.body.images[0].imageUrl;
  t.is((await fetch(app.url + url)).status, 200);
  const drafted = await app.request('PATCH', `/api/v1/products/${id}`, {
    body: { status: 'DRAFT' },
    token: seller.token,
  });
  t.is(drafted.status, 200);
  t.is(
    (await fetch(app.url + url)).status,
    200,
    'a DRAFT image is served to whoever has its unguessable URL',
  );
  // The soft delete alone (DELETE's first step, before its images are removed): the file is on disk, not served.
  await app.db('products').where('id', id).update({ status: 'DELETED' });
  t.true(fs.existsSync(path.join(productDir(app, id), path.basename(url))), 'the file is still on disk');
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await fetch(app.url + url, { method });
    t.is(res.status, 404, method);
    t.is(res.headers.get('content-type'), 'application/json; charset=utf-8', method);
    if (method === 'GET') {
      const body = (await res.json()) as Record<string, unknown>;
      t.like(body, { status: 404, code: 'NOT_FOUND', path: url });
      t.is(typeof body.message, 'string');
      t.is(typeof body.requestId, 'string');
    }
  }
});

test('a file on disk that no image row names (its delete could not remove it, an upload that did not commit) is 404', async (t) => {
  const id = await createProduct(app, seller.id);
  const up = await upload(app, id, seller.token, [{ name: 'o.png', data: imageBytes('png') }]);
  t.is(up.status, 201);
  const url: string = up.body.images[0].imageUrl;
  t.is((await fetch(app.url + url)).status, 200);
  // The row goes, the file stays: what a committed delete leaves when removing the file fails.
  await app.db('product_images').where('product_id', id).delete();
  t.true(fs.existsSync(path.join(productDir(app, id), path.basename(url))));
  const res = await app.request('GET', url);
  t.is(res.status, 404);
  t.is(res.body.code, 'NOT_FOUND');
  // A name of the right form in the directory of a live product, with no row at all.
  const stray = `${crypto.randomUUID()}.png`;
  fs.copyFileSync(path.join(productDir(app, id), path.basename(url)), path.join(productDir(app, id), stray));
  t.is((await app.request('GET', `/uploads/products/${id}/${stray}`)).status, 404);
});

test('no directory listing', async (t) => {
  for (const p of [
    `/uploads/products/${productId}/`,
    `/uploads/products/${productId}`,
    '/uploads/products/',
    '/uploads/',
    '/uploads',
  ]) {
    const res = await app.request('GET', p);
    t.is(res.status, 404, p);
    t.is(res.body.code, 'NOT_FOUND', p);
  }
});

test('files that are not <uuid>.<ext> are never served, even when they exist', async (t) => {
  const upper = fs
    .readdirSync(productDir(app, productId))
    .find((name) => /^[0-9A-F-]{36}\.png$/.test(name) && name !== name.toLowerCase());
  for (const name of [
    'notes.txt',
    upper as string,
    path.basename(imageUrl).replace('.png', '.PNG'),
    path.basename(imageUrl) + '.txt',
  ]) {
    const res = await app.request('GET', `/uploads/products/${productId}/${name}`);
    t.is(res.status, 404, name);
    t.is(res.body.code, 'NOT_FOUND', name);
    t.false(res.text.includes(SECRET));
  }
});

test('path traversal in the URL (plain, encoded, double-encoded, backslashes) never escapes the product directory', async (t) => {
  const name = path.basename(imageUrl);
  const attempts = [
    `/uploads/products/${productId}/../../secret.txt`,
    `/uploads/products/${productId}/../../../secret.txt`,
    `/uploads/products/${productId}/..%2F..%2Fsecret.txt`,
    `/uploads/products/${productId}/..%2f..%2f..%2fsecret.txt`,
    `/uploads/products/${productId}/%2e%2e%2f%2e%2e%2fsecret.txt`,
    `/uploads/products/${productId}/%2e%2e/%2e%2e/secret.txt`,
    `/uploads/products/${productId}/%252e%252e%252fsecret.txt`,
    `/uploads/products/${productId}/..%5C..%5Csecret.txt`,
    `/uploads/products/${productId}/..\\..\\secret.txt`,
    `/uploads/products/%2e%2e/secret.txt`,
    `/uploads/products/..%2F${productId}/${name}`,
    `/uploads/products/${productId}/..%2F${productId}%2F${name}`,
    `/uploads/products/${productId}%2F${name}`,
    `/uploads/../secret.txt`,
    `/uploads/tmp/${name}`,
  ];
  for (const attempt of attempts) {
    const res = await rawGet(attempt);
    t.true(res.status === 404 || res.status === 400, `${attempt} -> ${res.status}`);
    t.regex(res.contentType, /application\/json/, attempt);
    const body = JSON.parse(res.body);
    t.true(body.code === 'NOT_FOUND' || body.code === 'VALIDATION_ERROR', attempt);
    t.false(res.body.includes(SECRET), attempt);
  }
});

test('the static route is read-only', async (t) => {
  const res = await app.request('PUT', imageUrl, { raw: png });
  t.is(res.status, 405);
  t.is(res.body.code, 'METHOD_NOT_ALLOWED');
  const del = await app.request('DELETE', imageUrl);
  t.is(del.status, 405);
  t.true((await fetch(app.url + imageUrl)).ok);
});
