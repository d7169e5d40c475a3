// Seller quotas: at most SELLER_MAX_PRODUCTS live products and SELLER_MAX_IMAGE_BYTES of stored (re-encoded)
// images per seller; 409 beyond, enforced under concurrency (also over two instances on one database). The
// pruner gives back what a stopped process left: a deleted product's image rows, and files no row names.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import sharp from 'sharp';
import { createTestDatabase, startTestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createCategory, createMember, createProduct } from '../helpers/factories';
import { filesUnder, imageBytes, productDir, upload } from './images-fixtures';

const createBody = (categoryId: number, name: string) => ({
  categoryId,
  name,
  price: 10,
  stockQuantity: 3,
});

test('products: the quota allows SELLER_MAX_PRODUCTS live products; a deleted one frees its place', async (t) => {
  const app = await startTestApp({ env: { SELLER_MAX_PRODUCTS: '2' } });
  t.teardown(() => app.close());
  const seller = await createMember(app, 'SELLER');
  const categoryId = await createCategory(app);
  const create = (name: string, token = seller.token) =>
    app.request('POST', '/api/v1/products', { token, body: createBody(categoryId, name) });
  const first = await create('One');
  t.is(first.status, 201);
  t.is((await create('Two')).status, 201);
  const refused = await create('Three');
  assertError(t, refused, 409, 'PRODUCT_QUOTA_EXCEEDED', '/api/v1/products');
  t.is(refused.body.message, 'A seller may have at most 2 products (not counting deleted ones)');
  t.is((await app.db('products').where('seller_id', seller.id)).length, 2);
  // Another seller has a quota of their own.
  const other = await createMember(app, 'SELLER');
  t.is((await create('Theirs', other.token)).status, 201);
  // Deleting one frees a place.
  t.is(
    (await app.request('DELETE', `/api/v1/products/${first.body.id}`, { token: seller.token })).status,
    204,
  );
  const again = await create('Three again');
  t.is(again.status, 201);
  t.is(again.body.name, 'Three again');
});

test('products: 12 parallel creates over two instances on one database → exactly the quota of 5', async (t) => {
  const database = await createTestDatabase();
  const env = { SELLER_MAX_PRODUCTS: '5' };
  const a = await startTestApp({ database, env });
  const b = await startTestApp({ database, env });
  t.teardown(async () => {
    await a.close();
    await b.close();
    await database.drop();
  });
  const seller = await createMember(a, 'SELLER');
  const categoryId = await createCategory(a);
  const results = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      (i % 2 ? a : b).request('POST', '/api/v1/products', {
        token: seller.token,
        body: createBody(categoryId, `Racer ${i}`),
      }),
    ),
  );
  const statuses = results.map((r) => r.status).sort();
  t.deepEqual(statuses, [201, 201, 201, 201, 201, 409, 409, 409, 409, 409, 409, 409]);
  for (const res of results.filter((r) => r.status === 409)) t.is(res.body.code, 'PRODUCT_QUOTA_EXCEEDED');
  t.is((await a.db('products').where('seller_id', seller.id)).length, 5);
});

/** The size the service stores for imageBytes('png'): the re-encoded 6x4 image. */
const storedPngBytes = async () => (await sharp(imageBytes('png')).png().toBuffer()).length;

test('image bytes: uploads beyond SELLER_MAX_IMAGE_BYTES (after re-encoding) are 409 and store nothing', async (t) => {
  const size = await storedPngBytes();
  const app = await startTestApp({ env: { SELLER_MAX_IMAGE_BYTES: String(2 * size + 1) } });
  t.teardown(() => app.close());
  const seller = await createMember(app, 'SELLER');
  const [p1, p2] = [await createProduct(app, seller.id), await createProduct(app, seller.id)];
  // 10 KB on the wire each, but only the re-encoded bytes count.
  t.is(
    (await upload(app, p1, seller.token, [{ name: 'a.png', data: imageBytes('png', 10_240) }])).status,
    201,
  );
  t.is(
    (await upload(app, p2, seller.token, [{ name: 'b.png', data: imageBytes('png', 10_240) }])).status,
    201,
  );
  const rows = await app.db('product_images').select('byte_size');
  t.deepEqual(
    rows.map((row: { byte_size: number | string }) => Number(row.byte_size)),
    [size, size],
  );
  const refused = await upload(app, p2, seller.token, [{ name: 'c.png', data: imageBytes('png') }]);
  assertError(t, refused, 409, 'IMAGE_QUOTA_EXCEEDED', `/api/v1/products/${p2}/images`);
  t.is(
    refused.body.message,
    `A seller's images may take at most ${2 * size + 1} bytes (${2 * size} used, ${size} sent after re-encoding)`,
  );
  t.is(filesUnder(productDir(app, p2)).length, 1);
  // Deleting an image gives its bytes back.
  const [image] = await app.db('product_images').where('product_id', p1);
  t.is(
    (await app.request('DELETE', `/api/v1/products/${p1}/images/${image.id}`, { token: seller.token }))
      .status,
    204,
  );
  t.is((await upload(app, p2, seller.token, [{ name: 'c.png', data: imageBytes('png') }])).status, 201);
});

test('image bytes: parallel uploads to different products of one seller never exceed the quota together', async (t) => {
  const size = await storedPngBytes();
  const app = await startTestApp({ env: { SELLER_MAX_IMAGE_BYTES: String(2 * size + 1) } });
  t.teardown(() => app.close());
  const seller = await createMember(app, 'SELLER');
  const products = await Promise.all(Array.from({ length: 6 }, () => createProduct(app, seller.id)));
  const results = await Promise.all(
    products.map((id) => upload(app, id, seller.token, [{ name: 'x.png', data: imageBytes('png') }])),
  );
  t.deepEqual(results.map((r) => r.status).sort(), [201, 201, 409, 409, 409, 409]);
  const [{ total }] = await app.db('product_images').sum({ total: 'byte_size' });
  t.is(Number(total), 2 * size);
});

test('image bytes: deleting a product removes its images (rows and files) and gives their bytes back', async (t) => {
  const size = await storedPngBytes();
  const app = await startTestApp({ env: { SELLER_MAX_IMAGE_BYTES: String(2 * size + 1) } });
  t.teardown(() => app.close());
  const seller = await createMember(app, 'SELLER');
  const [p1, p2] = [await createProduct(app, seller.id), await createProduct(app, seller.id)];
  const two = [
    { name: 'a.png', data: imageBytes('png') },
    { name: 'b.png', data: imageBytes('png') },
  ];
  t.is((await upload(app, p1, seller.token, two)).status, 201);
  const full = await upload(app, p2, seller.token, [{ name: 'c.png', data: imageBytes('png') }]);
  assertError(t, full, 409, 'IMAGE_QUOTA_EXCEEDED', `/api/v1/products/${p2}/images`);
  const urls = (await app.db('product_images').where('product_id', p1)).map(
    (row: { image_url: string }) => row.image_url,
  );

  const deleted = await app.request('DELETE', `/api/v1/products/${p1}`, { token: seller.token });
  t.is(deleted.status, 204);
  t.deepEqual(await app.db('product_images').where('product_id', p1), []);
  t.deepEqual(filesUnder(productDir(app, p1)), []);
  for (const url of urls) t.is((await app.request('GET', url)).status, 404);
  const after = await upload(app, p2, seller.token, [{ name: 'c.png', data: imageBytes('png') }]);
  t.is(after.status, 201);
  t.is(after.body.images.length, 1);
});

test('image bytes: images of a product deleted without its purge (a process stopped between) go at the next prune', async (t) => {
  const size = await storedPngBytes();
  const app = await startTestApp({ env: { SELLER_MAX_IMAGE_BYTES: String(size + 1) } });
  t.teardown(() => app.close());
  const seller = await createMember(app, 'SELLER');
  const [p1, p2] = [await createProduct(app, seller.id), await createProduct(app, seller.id)];
  t.is((await upload(app, p1, seller.token, [{ name: 'a.png', data: imageBytes('png') }])).status, 201);
  // The soft delete alone, as the service's first step writes it.
  await app.db('products').where('id', p1).update({ status: 'DELETED' });
  const stillCounted = await upload(app, p2, seller.token, [{ name: 'b.png', data: imageBytes('png') }]);
  assertError(t, stillCounted, 409, 'IMAGE_QUOTA_EXCEEDED', `/api/v1/products/${p2}/images`);

  const pruned = await app.bundle.services.pruner.pruneOnce();
  t.is(pruned.deletedProductImages, 1);
  t.deepEqual(await app.db('product_images').where('product_id', p1), []);
  t.deepEqual(filesUnder(productDir(app, p1)), []);
  t.is((await upload(app, p2, seller.token, [{ name: 'b.png', data: imageBytes('png') }])).status, 201);
  // A live product's images are never touched.
  t.is((await app.bundle.services.pruner.pruneOnce()).deletedProductImages, 0);
  t.is((await app.db('product_images').where('product_id', p2)).length, 1);
});

test('image files no row names (a process stopped between a commit and its file removal) go at the next prune once an hour old; named, young and foreign files stay', async (t) => {
  const app = await startTestApp({ logLevel: 'info', env: { PRUNE_ORPHAN_IMAGE_FILES: 'true' } });
  t.teardown(() => app.close());
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id);
  const uploaded = await upload(app, productId, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
  t.is(uploaded.status, 201);
  const dir = productDir(app, productId);
  const [named] = filesUnder(dir);
  const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000);
  const place = (name: string, age: Date) => {
    fs.writeFileSync(path.join(dir, name), imageBytes('png'));
    fs.utimesSync(path.join(dir, name), age, age);
  };
  const orphan = `${crypto.randomUUID()}.png`;
  const young = `${crypto.randomUUID()}.png`;
  place(orphan, hoursAgo(2));
  place(young, hoursAgo(0.5));
  place('notes.txt', hoursAgo(2)); // not a name this service stores: never touched
  fs.utimesSync(path.join(dir, named), hoursAgo(2), hoursAgo(2));

  const pruned = await app.bundle.services.pruner.pruneOnce();
  t.is(pruned.orphanImageFiles, 1);
  t.deepEqual(filesUnder(dir).sort(), [named, young, 'notes.txt'].sort());
  const served = await app.request('GET', uploaded.body.images[0].imageUrl);
  t.is(served.status, 200);
  t.is((await app.bundle.services.pruner.pruneOnce()).orphanImageFiles, 0);
  t.regex(app.logs.text, /Removed 1 image file\(s\) that no image row names/);
});

test('the orphan pass aborted during its first batch of 200 directories ends after it: the rest is for the next pass', async (t) => {
  const app = await startTestApp({ env: { PRUNE_ORPHAN_IMAGE_FILES: 'true' } });
  t.teardown(() => app.close());
  const old = new Date(Date.now() - 2 * 3600_000);
  // 201 product directories, each with one old file no row names (product ids no product has: none has a row).
  const ids = Array.from({ length: 201 }, (_, index) => 900_000 + index);
  for (const id of ids) {
    fs.mkdirSync(productDir(app, id), { recursive: true });
    const file = path.join(productDir(app, id), `${crypto.randomUUID()}.png`);
    fs.writeFileSync(file, imageBytes('png'));
    fs.utimesSync(file, old, old);
  }
  const images = app.bundle.services.images;
  // A signal that turns aborted once the pass has looked at it (before its first batch): stop() called while
  // the first batch is under way.
  let looked = 0;
  const abortedDuringFirstBatch = {
    get aborted() {
      return looked++ > 0;
    },
  } as AbortSignal;
  t.is(await images.pruneOrphanFiles(abortedDuringFirstBatch), 200);
  const left = ids.filter((id) => filesUnder(productDir(app, id)).length > 0);
  t.is(left.length, 1);
  t.is(await images.pruneOrphanFiles(AbortSignal.abort()), 0, 'an aborted signal starts no batch');
  t.is(await images.pruneOrphanFiles(), 1, 'the next pass takes the rest');
  t.true(ids.every((id) => filesUnder(productDir(app, id)).length === 0));
});

test("without PRUNE_ORPHAN_IMAGE_FILES no file without a row is removed: UPLOAD_DIR may hold another database's images", async (t) => {
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'mkt-shared-uploads-'));
  t.teardown(() => fs.rmSync(uploads, { recursive: true, force: true }));
  // Two databases, one directory (DATA_DIR defaults to ./var for SQLite and MySQL alike): product ids overlap,
  // and neither has rows for the other's files.
  const ours = await startTestApp({ env: { UPLOAD_DIR: uploads } });
  t.teardown(() => ours.close());
  const other = await startTestApp({ env: { UPLOAD_DIR: uploads } });
  t.teardown(() => other.close());
  const seller = await createMember(ours, 'SELLER');
  const productId = await createProduct(ours, seller.id);
  const uploaded = await upload(ours, productId, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
  t.is(uploaded.status, 201);
  const dir = productDir(ours, productId);
  const [stored] = filesUnder(dir);
  const old = new Date(Date.now() - 2 * 3600_000);
  fs.utimesSync(path.join(dir, stored), old, old);

  for (const app of [other, ours]) {
    const pruned = await app.bundle.services.pruner.pruneOnce();
    t.false('orphanImageFiles' in pruned, 'the target is off');
  }
  t.deepEqual(filesUnder(dir), [stored]);
  t.is((await ours.request('GET', uploaded.body.images[0].imageUrl)).status, 200);
});
