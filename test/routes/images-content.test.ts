// Uploaded images are decoded and re-encoded (sharp): metadata such as EXIF GPS positions is gone from the
// stored file, a GIF/JS polyglot is stored as a clean GIF without its script, undecodable files and
// decompression bombs (over UPLOAD_MAX_PIXELS) are 400 in the one error shape, and nothing is stored then.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import sharp from 'sharp';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { decoded, filesUnder, imageBytes, imageRows, productDir, tmpFiles, upload } from './images-fixtures';

const MAX_PIXELS = 1_000_000;
let app: TestApp;
let seller: TestMember;

test.before(async () => {
  app = await startTestApp({ env: { UPLOAD_MAX_PIXELS: String(MAX_PIXELS) } });
  seller = await createMember(app, 'SELLER');
});
test.after.always(async () => {
  await app?.close();
});

const storedFile = (productId: number, imageUrl: string) =>
  fs.readFileSync(path.join(productDir(app, productId), path.basename(imageUrl)));

async function assertNothingStored(t: import('ava').ExecutionContext, productId: number) {
  t.deepEqual(await imageRows(app, productId), []);
  t.deepEqual(filesUnder(productDir(app, productId)), []);
  t.deepEqual(tmpFiles(app), []);
}

/** A GIF that is also JavaScript: its screen width bytes open a comment that a GIF comment block closes. */
function gifJsPolyglot(): Buffer {
  const script = Buffer.from('*/=alert(document.domain);//', 'latin1');
  return Buffer.concat([
    Buffer.from('GIF89a', 'latin1'),
    Buffer.from([0x2f, 0x2a, 0x01, 0x00, 0x80, 0x00, 0x00]), // width "/*", height 1, 2-colour table
    Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff, 0xff]),
    Buffer.from([0x21, 0xfe, script.length]), // comment extension
    script,
    Buffer.from([0x00]),
    Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]), // one 1x1 image
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]),
    Buffer.from([0x3b]),
  ]);
}

test.serial(
  'a JPEG with EXIF GPS: the stored file has no metadata, its orientation applied to the pixels',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const photo = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#a52' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .withExifMerge({
        IFD0: { Make: 'SpyCam' },
        IFD3: {
          GPSLatitudeRef: 'N',
          GPSLatitude: '37/1 33/1 59/1',
          GPSLongitudeRef: 'E',
          GPSLongitude: '126/1 58/1 40/1',
        },
      })
      .toBuffer();
    // The upload really carries the position (the GPS IFD pointer tag 0x8825) and the camera.
    const before = await sharp(photo).metadata();
    t.truthy(before.exif);
    t.true(
      before.exif!.includes(Buffer.from([0x88, 0x25])) || before.exif!.includes(Buffer.from([0x25, 0x88])),
    );
    t.is(before.orientation, 6);

    const res = await upload(app, productId, seller.token, [{ name: 'holiday.JPG', data: photo }]);
    t.is(res.status, 201, res.text);
    t.is(res.body.images.length, 1);
    t.true(res.body.images[0].imageUrl.endsWith('.jpg'));
    const stored = storedFile(productId, res.body.images[0].imageUrl);
    const after = await sharp(stored).metadata();
    t.is(after.format, 'jpeg');
    t.is(after.exif, undefined);
    t.is(after.orientation, undefined);
    t.is(after.xmp, undefined);
    t.false(stored.includes(Buffer.from('SpyCam')));
    // Orientation 6 (rotate 90°) was applied: 8x6 became 6x8, so the picture looks as it did.
    t.deepEqual([after.width, after.height], [6, 8]);
    const served = await fetch(app.url + res.body.images[0].imageUrl);
    t.is(served.headers.get('content-type'), 'image/jpeg');
    t.true(Buffer.from(await served.arrayBuffer()).equals(stored));
  },
);

test.serial('a GIF/JS polyglot is re-encoded into a clean GIF: the script is not stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const polyglot = gifJsPolyglot();
  t.true(polyglot.includes(Buffer.from('alert(document.domain)')));
  const res = await upload(app, productId, seller.token, [{ name: 'cat.gif', data: polyglot }]);
  t.is(res.status, 201, res.text);
  const stored = storedFile(productId, res.body.images[0].imageUrl);
  t.false(stored.includes(Buffer.from('alert')));
  t.false(stored.subarray(0, 8).equals(polyglot.subarray(0, 8)), 'the "/*" header is not kept');
  t.deepEqual(await decoded(stored), { format: 'gif', width: 1, height: 1, exif: false });
});

test.serial(
  'an undecodable file with a valid signature is 400 INVALID_FILE_TYPE, and the request stores nothing',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const fake = Buffer.concat([
      Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
      Buffer.from('<script>alert(1)</script>'),
    ]);
    const res = await upload(app, productId, seller.token, [
      { name: 'good.png', data: imageBytes('png') },
      { name: 'fake.jpg', data: fake },
    ]);
    assertError(t, res, 400, 'INVALID_FILE_TYPE', `/api/v1/products/${productId}/images`);
    t.is(res.body.message, '"fake.jpg" is not a readable jpeg image');
    await assertNothingStored(t, productId);
  },
);

test.serial('a truncated image is 400 INVALID_FILE_TYPE (never half-decoded)', async (t) => {
  const productId = await createProduct(app, seller.id);
  const whole = await sharp({
    create: {
      width: 64,
      height: 64,
      channels: 3,
      background: '#000',
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  })
    .jpeg()
    .toBuffer();
  const res = await upload(app, productId, seller.token, [
    { name: 'cut.jpg', data: whole.subarray(0, Math.floor(whole.length / 2)) },
  ]);
  assertError(t, res, 400, 'INVALID_FILE_TYPE', `/api/v1/products/${productId}/images`);
  await assertNothingStored(t, productId);
});

test.serial(
  'a decompression bomb (more pixels than UPLOAD_MAX_PIXELS, tiny on the wire) is 400 before decoding',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const bomb = await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#000' } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    t.true(bomb.length < 20_000, `${bomb.length} bytes`);
    const res = await upload(app, productId, seller.token, [{ name: 'bomb.png', data: bomb }]);
    assertError(t, res, 400, 'IMAGE_LIMIT_EXCEEDED', `/api/v1/products/${productId}/images`);
    t.is(res.body.message, `"bomb.png" has 2000000 pixels; at most ${MAX_PIXELS} are accepted`);
    await assertNothingStored(t, productId);
    // Just under the cap is fine.
    const fine = await sharp({ create: { width: 1000, height: 1000, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const ok = await upload(app, productId, seller.token, [{ name: 'fine.png', data: fine }]);
    t.is(ok.status, 201, ok.text);
  },
);

test.serial('an animated GIF counts the pixels of every frame', async (t) => {
  const productId = await createProduct(app, seller.id);
  // Frames of 300x300 (90 k pixels each, far under the 1 M cap); together they are over it.
  const frames = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      sharp({ create: { width: 300, height: 300, channels: 3, background: { r: i * 6, g: 0, b: 0 } } })
        .png()
        .toBuffer(),
    ),
  );
  const animation = await sharp(frames, { join: { animated: true } })
    .gif()
    .toBuffer();
  const meta = await sharp(animation).metadata();
  t.true(meta.pages! * 300 * 300 > MAX_PIXELS, `${meta.pages} frames`);
  const res = await upload(app, productId, seller.token, [{ name: 'anim.gif', data: animation }]);
  assertError(t, res, 400, 'IMAGE_LIMIT_EXCEEDED', `/api/v1/products/${productId}/images`);
  t.is(
    res.body.message,
    `"anim.gif" has ${meta.pages! * 90_000} pixels in ${meta.pages} frames; at most ${MAX_PIXELS} are accepted`,
  );
  await assertNothingStored(t, productId);
});

test.serial('a small animated GIF stays animated after re-encoding', async (t) => {
  const productId = await createProduct(app, seller.id);
  const frames = await Promise.all(
    ['#f00', '#0f0', '#00f'].map((background) =>
      sharp({ create: { width: 10, height: 10, channels: 3, background } })
        .png()
        .toBuffer(),
    ),
  );
  const animation = await sharp(frames, { join: { animated: true } })
    .gif()
    .toBuffer();
  const res = await upload(app, productId, seller.token, [{ name: 'blink.gif', data: animation }]);
  t.is(res.status, 201, res.text);
  const stored = await sharp(storedFile(productId, res.body.images[0].imageUrl)).metadata();
  t.is(stored.format, 'gif');
  t.is(stored.pages, 3);
});
