// Edges of the image rules that the broader image tests pass over: a DELETED product is absent (404) even to a
// seller who does not own it, never a 403 that would confirm it exists; both GIF signatures (GIF87a and GIF89a)
// are GIFs; and the pixel cap (UPLOAD_MAX_PIXELS) is inclusive, to the pixel.
import path from 'node:path';
import test from 'ava';
import sharp from 'sharp';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { decoded, filesUnder, imageBytes, imageRows, productDir, tmpFiles, upload } from './images-fixtures';

// 100 x 100; one pixel more is 73 x 137 (10 001 = 73 x 137), a real image of exactly cap + 1 pixels.
const MAX_PIXELS = 10_000;
let app: TestApp;
let seller: TestMember;
let otherSeller: TestMember;

test.before(async () => {
  app = await startTestApp({ env: { UPLOAD_MAX_PIXELS: String(MAX_PIXELS) } });
  seller = await createMember(app, 'SELLER');
  otherSeller = await createMember(app, 'SELLER');
});
test.after.always(async () => {
  await app?.close();
});

const uploadPath = (productId: number) => `/api/v1/products/${productId}/images`;

async function assertNothingStored(t: import('ava').ExecutionContext, productId: number) {
  t.deepEqual(await imageRows(app, productId), []);
  t.deepEqual(filesUnder(productDir(app, productId)), []);
  t.deepEqual(tmpFiles(app), []);
}

/** A PNG of exactly `width` x `height` pixels. */
const pngOf = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();

/** A 1x1 GIF87a written by hand (sharp writes GIF89a): no extension blocks, as the 1987 format has none. */
function gif87a(): Buffer {
  return Buffer.concat([
    Buffer.from('GIF87a', 'latin1'),
    Buffer.from([0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00]), // 1x1, a global table of 2 colours
    Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff, 0xff]),
    Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]), // one 1x1 image
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]),
    Buffer.from([0x3b]),
  ]);
}

test.serial(
  "another seller's DELETED product is 404 NOT_FOUND (not 403) for an upload, and nothing is stored",
  async (t) => {
    const productId = await createProduct(app, seller.id, { status: 'DELETED' });
    const res = await upload(app, productId, otherSeller.token, [{ name: 'a.png', data: imageBytes('png') }]);
    assertError(t, res, 404, 'NOT_FOUND', uploadPath(productId));
    await assertNothingStored(t, productId);
  },
);

test.serial(
  "another seller's DELETED product is 404 NOT_FOUND (not 403) for an image delete, and the image row stays",
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const up = await upload(app, productId, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
    t.is(up.status, 201, up.text);
    const imageId = up.body.images[0].id as number;
    // Deleted behind the service's back, so the purge that a DELETE runs does not take the image row with it.
    await app.db('products').where('id', productId).update({ status: 'DELETED' });
    const url = `/api/v1/products/${productId}/images/${imageId}`;
    const res = await app.request('DELETE', url, { token: otherSeller.token });
    assertError(t, res, 404, 'NOT_FOUND', url);
    t.deepEqual(
      (await imageRows(app, productId)).map((row) => row.id),
      [imageId],
    );
    t.is(filesUnder(productDir(app, productId)).length, 1);
  },
);

test.serial('a GIF87a file named .gif is accepted and stored as a GIF', async (t) => {
  const productId = await createProduct(app, seller.id);
  const data = gif87a();
  t.is(data.subarray(0, 6).toString('latin1'), 'GIF87a');
  t.like(await decoded(data), { format: 'gif', width: 1, height: 1 });
  const res = await upload(app, productId, seller.token, [{ name: 'old.gif', data }]);
  t.is(res.status, 201, res.text);
  t.is(res.body.images.length, 1);
  const [image] = res.body.images as Array<{ imageUrl: string }>;
  t.is(path.extname(image.imageUrl), '.gif');
  const served = await fetch(app.url + image.imageUrl);
  t.is(served.status, 200);
  t.is(served.headers.get('content-type'), 'image/gif');
  t.like(await decoded(Buffer.from(await served.arrayBuffer())), { format: 'gif', width: 1, height: 1 });
});

test.serial('an image of exactly UPLOAD_MAX_PIXELS pixels is accepted', async (t) => {
  const productId = await createProduct(app, seller.id);
  const res = await upload(app, productId, seller.token, [{ name: 'cap.png', data: await pngOf(100, 100) }]);
  t.is(res.status, 201, res.text);
  const stored = filesUnder(productDir(app, productId));
  t.is(stored.length, 1);
  t.is(path.basename(res.body.images[0].imageUrl), stored[0]);
});

test.serial(
  'an image of UPLOAD_MAX_PIXELS + 1 pixels is 400 IMAGE_LIMIT_EXCEEDED and nothing is stored',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const data = await pngOf(73, 137);
    t.is(73 * 137, MAX_PIXELS + 1);
    const res = await upload(app, productId, seller.token, [{ name: 'over.png', data }]);
    assertError(t, res, 400, 'IMAGE_LIMIT_EXCEEDED', uploadPath(productId));
    t.is(res.body.message, `"over.png" has ${MAX_PIXELS + 1} pixels; at most ${MAX_PIXELS} are accepted`);
    await assertNothingStored(t, productId);
  },
);
