import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { until } from '../helpers/until';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import {
  decoded,
  IMAGE_SIZE,
  imageBytes,
  imageForm,
  imageRows,
  productDir,
  tmpFiles,
  upload,
  UUID_NAME,
  filesUnder,
} from './images-fixtures';
import { rawExchange as rawHttp } from '../helpers/raw-http';

let app: TestApp;
let seller: TestMember;
let otherSeller: TestMember;
let buyer: TestMember;

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
  otherSeller = await createMember(app, 'SELLER');
  buyer = await createMember(app, 'BUYER');
});
test.after.always(async () => {
  await app?.close();
});

/** Nothing for this product: no row, no file, and no temporary file left anywhere. */
async function assertNothingStored(t: import('ava').ExecutionContext, productId: number) {
  t.deepEqual(await imageRows(app, productId), []);
  t.deepEqual(filesUnder(productDir(app, productId)), []);
  t.deepEqual(tmpFiles(app), []);
}

test.serial(
  'a jpg, a png and a gif are stored re-encoded as <uuid>.<ext> files with rows, and served back as stored',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const jpg = imageBytes('jpeg');
    const png = imageBytes('png');
    const gif = imageBytes('gif');
    const res = await upload(app, productId, seller.token, [
      { name: 'photo.jpg', data: jpg },
      { name: 'diagram.PNG', data: png },
      { name: 'anim.gif', data: gif },
    ]);
    t.is(res.status, 201);
    t.deepEqual(Object.keys(res.body), ['images']);
    const images = res.body.images as Array<{ id: number; imageUrl: string; displayOrder: number }>;
    t.deepEqual(
      images.map((image) => image.displayOrder),
      [1, 2, 3],
    );
    const exts = images.map((image) => path.extname(image.imageUrl));
    t.deepEqual(exts, ['.jpg', '.png', '.gif']);

    const rows = await imageRows(app, productId);
    t.deepEqual(
      rows.map((row) => ({ id: row.id, imageUrl: row.image_url, displayOrder: row.display_order })),
      images,
    );
    for (const [index, image] of images.entries()) {
      const name = path.basename(image.imageUrl);
      t.regex(name, UUID_NAME);
      t.is(image.imageUrl, `/uploads/products/${productId}/${name}`);
      t.is(rows[index].file_name, name);
      t.true(Object.keys(image).length === 3);
    }
    t.deepEqual(
      filesUnder(productDir(app, productId)),
      images.map((image) => path.basename(image.imageUrl)).sort(),
    );
    t.deepEqual(tmpFiles(app), []);

    const expected = [
      { data: jpg, type: 'image/jpeg', format: 'jpeg' },
      { data: png, type: 'image/png', format: 'png' },
      { data: gif, type: 'image/gif', format: 'gif' },
    ];
    for (const [index, image] of images.entries()) {
      const served = await fetch(app.url + image.imageUrl);
      t.is(served.status, 200);
      t.is(served.headers.get('content-type'), expected[index].type);
      t.is(served.headers.get('x-content-type-options'), 'nosniff');
      t.is(served.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      const bytes = Buffer.from(await served.arrayBuffer());
      const stored = fs.readFileSync(path.join(productDir(app, productId), path.basename(image.imageUrl)));
      t.true(bytes.equals(stored));
      // Re-encoded: the same picture in the same format, without what followed it in the upload.
      t.false(bytes.equals(expected[index].data));
      t.true(bytes.length < expected[index].data.length);
      t.deepEqual(await decoded(bytes), { format: expected[index].format, ...IMAGE_SIZE, exif: false });
    }
  },
);

test.serial(
  'a later upload appends after the existing images and the response lists all of them',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const first = await upload(app, productId, seller.token, [
      { name: 'a.png', data: imageBytes('png') },
      { name: 'b.jpeg', data: imageBytes('jpeg') },
    ]);
    t.is(first.status, 201);
    const second = await upload(app, productId, seller.token, [{ name: 'c.gif', data: imageBytes('gif') }]);
    t.is(second.status, 201);
    t.deepEqual(
      second.body.images.map((image: { displayOrder: number }) => image.displayOrder),
      [1, 2, 3],
    );
    t.deepEqual(second.body.images.slice(0, 2), first.body.images);
    t.true(second.body.images[1].imageUrl.endsWith('.jpeg'));
  },
);

test.serial('a file of exactly 10 MB is accepted (and stored re-encoded)', async (t) => {
  const productId = await createProduct(app, seller.id);
  const res = await upload(app, productId, seller.token, [
    { name: 'big.png', data: imageBytes('png', 10 * 1024 * 1024) },
  ]);
  t.is(res.status, 201);
  const [name] = filesUnder(productDir(app, productId));
  const stored = fs.readFileSync(path.join(productDir(app, productId), name));
  t.true(stored.length < 1024);
  t.deepEqual(await decoded(stored), { format: 'png', ...IMAGE_SIZE, exif: false });
  t.deepEqual(tmpFiles(app), []);
});

test.serial(
  'a file of 10 MB + 1 byte is 413 FILE_TOO_LARGE and nothing is stored (no row, no file, no temp file)',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const res = await upload(app, productId, seller.token, [
      { name: 'ok.png', data: imageBytes('png') },
      { name: 'huge.png', data: imageBytes('png', 10 * 1024 * 1024 + 1) },
    ]);
    t.is(res.status, 413);
    t.is(res.body.code, 'FILE_TOO_LARGE');
    t.is(res.body.status, 413);
    t.is(res.body.path, `/api/v1/products/${productId}/images`);
    await assertNothingStored(t, productId);
  },
);

test.serial('a text file named .png is 400 INVALID_FILE_TYPE and nothing is stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const res = await upload(app, productId, seller.token, [
    { name: 'notes.png', data: Buffer.from('just some text, not an image\n'), type: 'image/png' },
  ]);
  t.is(res.status, 400);
  t.is(res.body.code, 'INVALID_FILE_TYPE');
  t.regex(res.body.message, /notes\.png/);
  await assertNothingStored(t, productId);
});

test.serial('a disallowed extension is 400 INVALID_FILE_TYPE even with image content', async (t) => {
  const productId = await createProduct(app, seller.id);
  for (const name of ['photo.bmp', 'photo.svg', 'photo', 'photo.png.exe']) {
    const res = await upload(app, productId, seller.token, [{ name, data: imageBytes('png') }]);
    t.is(res.status, 400, name);
    t.is(res.body.code, 'INVALID_FILE_TYPE', name);
  }
  await assertNothingStored(t, productId);
});

test.serial(
  'an extension that disagrees with the content is 400 INVALID_FILE_TYPE (a png named .jpg, a gif named .png)',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const asJpg = await upload(app, productId, seller.token, [{ name: 'x.jpg', data: imageBytes('png') }]);
    t.is(asJpg.status, 400);
    t.is(asJpg.body.code, 'INVALID_FILE_TYPE');
    const asPng = await upload(app, productId, seller.token, [{ name: 'x.png', data: imageBytes('gif') }]);
    t.is(asPng.status, 400);
    t.is(asPng.body.code, 'INVALID_FILE_TYPE');
    const empty = await upload(app, productId, seller.token, [{ name: 'empty.gif', data: Buffer.alloc(0) }]);
    t.is(empty.status, 400);
    t.is(empty.body.code, 'INVALID_FILE_TYPE');
    await assertNothingStored(t, productId);
  },
);

test.serial('one bad file among good ones: 400 and nothing of the request is stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const res = await upload(app, productId, seller.token, [
    { name: 'good1.jpg', data: imageBytes('jpeg') },
    { name: 'good2.png', data: imageBytes('png') },
    { name: 'bad.gif', data: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>') },
    { name: 'good3.gif', data: imageBytes('gif') },
  ]);
  t.is(res.status, 400);
  t.is(res.body.code, 'INVALID_FILE_TYPE');
  await assertNothingStored(t, productId);
});

test.serial('a path-traversal file name is stored under a UUID inside the product directory', async (t) => {
  const productId = await createProduct(app, seller.id);
  const before = filesUnder(app.config.uploadDir).filter((entry) => !entry.startsWith('products'));
  const res = await upload(app, productId, seller.token, [
    { name: '../../../../evil.png', data: imageBytes('png') },
    { name: '..\\..\\evil2.gif', data: imageBytes('gif') },
  ]);
  t.is(res.status, 201);
  const names = res.body.images.map((image: { imageUrl: string }) => path.basename(image.imageUrl));
  for (const name of names) t.regex(name, UUID_NAME);
  t.deepEqual(filesUnder(productDir(app, productId)), [...names].sort());
  t.deepEqual(
    filesUnder(app.config.uploadDir).filter((entry) => !entry.startsWith('products')),
    before,
  );
  t.false(fs.existsSync(path.join(app.config.dataDir, 'evil.png')));
  t.false(fs.existsSync(path.join(app.config.uploadDir, 'evil.png')));
});

test.serial('a 6th image is 400 IMAGE_LIMIT_EXCEEDED and the 5 stay as they were', async (t) => {
  const productId = await createProduct(app, seller.id);
  const five = await upload(
    app,
    productId,
    seller.token,
    [1, 2, 3, 4, 5].map((n) => ({ name: `p${n}.png`, data: imageBytes('png') })),
  );
  t.is(five.status, 201);
  t.is(five.body.images.length, 5);
  const sixth = await upload(app, productId, seller.token, [{ name: 'p6.png', data: imageBytes('png') }]);
  t.is(sixth.status, 400);
  t.is(sixth.body.code, 'IMAGE_LIMIT_EXCEEDED');
  t.is((await imageRows(app, productId)).length, 5);
  t.is(filesUnder(productDir(app, productId)).length, 5);
  t.deepEqual(tmpFiles(app), []);
});

test.serial('4 existing + 2 new is 400 IMAGE_LIMIT_EXCEEDED and neither new image is stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const four = await upload(
    app,
    productId,
    seller.token,
    [1, 2, 3, 4].map((n) => ({ name: `p${n}.jpg`, data: imageBytes('jpeg') })),
  );
  t.is(four.status, 201);
  const more = await upload(app, productId, seller.token, [
    { name: 'p5.jpg', data: imageBytes('jpeg') },
    { name: 'p6.jpg', data: imageBytes('jpeg') },
  ]);
  t.is(more.status, 400);
  t.is(more.body.code, 'IMAGE_LIMIT_EXCEEDED');
  t.deepEqual(
    (await imageRows(app, productId)).map((row) => row.id),
    four.body.images.map((image: { id: number }) => image.id),
  );
  t.is(filesUnder(productDir(app, productId)).length, 4);
  t.deepEqual(tmpFiles(app), []);
});

test.serial('6 files in one request is 400 IMAGE_LIMIT_EXCEEDED and nothing is stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const res = await upload(
    app,
    productId,
    seller.token,
    [1, 2, 3, 4, 5, 6].map((n) => ({ name: `p${n}.gif`, data: imageBytes('gif') })),
  );
  t.is(res.status, 400);
  t.is(res.body.code, 'IMAGE_LIMIT_EXCEEDED');
  await assertNothingStored(t, productId);
});

test.serial('no "images" field, a file in another field, or a non-multipart body are refused', async (t) => {
  const productId = await createProduct(app, seller.id);
  const textOnly = new FormData();
  textOnly.append('note', 'hello');
  const none = await app.request('POST', `/api/v1/products/${productId}/images`, {
    token: seller.token,
    raw: textOnly,
  });
  t.is(none.status, 400);
  t.is(none.body.code, 'VALIDATION_ERROR');
  t.deepEqual(
    none.body.errors.map((e: { field: string }) => e.field),
    ['note', 'images'],
  );

  const otherField = await upload(app, productId, seller.token, [
    { name: 'a.png', data: imageBytes('png'), field: 'file' },
  ]);
  t.is(otherField.status, 400);
  t.is(otherField.body.code, 'VALIDATION_ERROR');

  const json = await app.request('POST', `/api/v1/products/${productId}/images`, {
    token: seller.token,
    body: { images: [] },
  });
  t.is(json.status, 415);
  t.is(json.body.code, 'UNSUPPORTED_MEDIA_TYPE');
  await assertNothingStored(t, productId);
});

test.serial('a text field beside the files is 400 naming it, and nothing is stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const withNote = imageForm([{ name: 'a.png', data: imageBytes('png') }]);
  withNote.append('note', 'hello');
  const note = await app.request('POST', `/api/v1/products/${productId}/images`, {
    token: seller.token,
    raw: withNote,
  });
  t.is(note.status, 400);
  t.is(note.body.code, 'VALIDATION_ERROR');
  t.deepEqual(note.body.errors, [{ field: 'note', message: 'unknown field' }]);

  const textImages = imageForm([{ name: 'a.png', data: imageBytes('png') }]);
  textImages.append('images', 'not a file');
  const text = await app.request('POST', `/api/v1/products/${productId}/images`, {
    token: seller.token,
    raw: textImages,
  });
  t.is(text.status, 400);
  t.is(text.body.code, 'VALIDATION_ERROR');
  t.deepEqual(text.body.errors, [{ field: 'images', message: 'must carry files, not text' }]);
  await assertNothingStored(t, productId);
});

const rawExchange = (request: string) => rawHttp(app.url, request);

test.serial(
  'a multipart Content-Type on a request without a body is 400 (no images sent), not 415',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    // Neither Content-Length nor Transfer-Encoding: by HTTP's rules the request has no body at all.
    const res = await rawExchange(
      `POST /api/v1/products/${productId}/images HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
        `Authorization: Bearer ${seller.token}\r\nContent-Type: multipart/form-data; boundary=none\r\n\r\n`,
    );
    t.is(res.status, 400);
    t.is(res.body.code, 'VALIDATION_ERROR');
    t.deepEqual(
      res.body.errors.map((error: { field: string }) => error.field),
      ['images'],
    );
    await assertNothingStored(t, productId);
  },
);

test.serial(
  'a declared body larger than any form is 413 at once, before it is read; the connection stays usable for the rest of the body',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const declared = 600 * 1024 * 1024;
    const url = new URL(app.url);
    const socket = net.connect(Number(url.port), url.hostname);
    let text = '';
    let failed: Error | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', (err) => (failed = err));
    // Only the headers and a first part are sent: the answer must not wait for the other 600 MB. The media
    // type's case does not matter.
    socket.write(
      `POST /api/v1/products/${productId}/images HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${seller.token}\r\nContent-Type: Multipart/Form-Data; boundary=big\r\n` +
        `Content-Length: ${declared}\r\n\r\n--big\r\nContent-Disposition: form-data; name="images"; filename="a.png"\r\n\r\n`,
    );
    const answered = () => {
      const [head, body = ''] = text.split('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
      return body.length >= length;
    };
    await until(answered, 5000, () => text);
    const [head, body] = text.split('\r\n\r\n');
    t.regex(head, /^HTTP\/1\.1 413 /);
    t.notRegex(head, /connection: close/i);
    t.like(JSON.parse(body), { status: 413, code: 'PAYLOAD_TOO_LARGE' });
    t.regex(JSON.parse(body).message, new RegExp(`${declared} bytes declared`));
    // A client still sending is not reset: the rest of its body is read and dropped.
    for (let i = 0; i < 16; i++) socket.write(Buffer.alloc(64 * 1024, 1));
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.is(failed, undefined);
    t.false(socket.destroyed);
    socket.destroy();
    await assertNothingStored(t, productId);
  },
);

test.serial(
  'a malformed multipart body (no boundary, or cut off mid-file) is 400 and leaves no file behind',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const url = `/api/v1/products/${productId}/images`;
    const noBoundary = await app.request('POST', url, {
      token: seller.token,
      headers: { 'Content-Type': 'multipart/form-data' },
      raw: 'whatever',
    });
    t.is(noBoundary.status, 400);
    t.is(noBoundary.body.code, 'VALIDATION_ERROR');
    t.deepEqual(
      noBoundary.body.errors.map((error: { field: string }) => error.field),
      ['body'],
      'the parser names what is wrong',
    );

    const boundary = 'cut-off-boundary';
    const truncated = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
      ),
      imageBytes('png', 64 * 1024),
    ]);
    const cut = await app.request('POST', url, {
      token: seller.token,
      headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      raw: truncated,
    });
    t.is(cut.status, 400);
    t.is(cut.body.code, 'VALIDATION_ERROR');
    t.is(cut.body.errors[0].field, 'body');
    t.truthy(cut.body.errors[0].message);
    await assertNothingStored(t, productId);
  },
);

test.serial('anonymous upload is 401 and writes nothing', async (t) => {
  const productId = await createProduct(app, seller.id);
  const res = await upload(app, productId, undefined, [{ name: 'a.png', data: imageBytes('png') }]);
  t.is(res.status, 401);
  t.is(res.body.code, 'UNAUTHENTICATED');
  await assertNothingStored(t, productId);
});

test.serial('a buyer is 403, another seller is 403, and nothing is stored', async (t) => {
  const productId = await createProduct(app, seller.id);
  const asBuyer = await upload(app, productId, buyer.token, [{ name: 'a.png', data: imageBytes('png') }]);
  t.is(asBuyer.status, 403);
  t.is(asBuyer.body.code, 'FORBIDDEN');
  const asOther = await upload(app, productId, otherSeller.token, [
    { name: 'a.png', data: imageBytes('png') },
  ]);
  t.is(asOther.status, 403);
  t.is(asOther.body.code, 'FORBIDDEN');
  await assertNothingStored(t, productId);
});

test.serial(
  'a stranger is refused before the body is streamed: a 10 MB + 1 byte file from another seller is 403, not 413',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const res = await upload(app, productId, otherSeller.token, [
      { name: 'huge.png', data: imageBytes('png', 10 * 1024 * 1024 + 1) },
    ]);
    t.is(res.status, 403);
    t.is(res.body.code, 'FORBIDDEN');
    await assertNothingStored(t, productId);
    // The connection and the service are fine afterwards.
    const ok = await upload(app, productId, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
    t.is(ok.status, 201);
  },
);

test.serial(
  "an unknown or deleted product is 404, a bad id is 400; another seller's draft is 403 (upload and delete); the owner may add images to a draft",
  async (t) => {
    const unknown = await upload(app, 99_999_999, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
    t.is(unknown.status, 404);
    t.is(unknown.body.code, 'NOT_FOUND');

    const deletedId = await createProduct(app, seller.id, { status: 'DELETED' });
    const deleted = await upload(app, deletedId, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
    t.is(deleted.status, 404);
    t.is(deleted.body.code, 'NOT_FOUND');
    await assertNothingStored(t, deletedId);

    const badId = await app.request('POST', '/api/v1/products/abc/images', {
      token: seller.token,
      raw: new FormData(),
    });
    t.is(badId.status, 400);
    t.is(badId.body.code, 'VALIDATION_ERROR');

    const draftId = await createProduct(app, seller.id, { status: 'DRAFT' });
    const strangerOnDraft = await upload(app, draftId, otherSeller.token, [
      { name: 'a.png', data: imageBytes('png') },
    ]);
    // Like PATCH/DELETE of the product: an existing product of someone else is 403, whatever its status.
    t.is(strangerOnDraft.status, 403);
    t.like(strangerOnDraft.body, { status: 403, code: 'FORBIDDEN' });
    await assertNothingStored(t, draftId);
    const ownerOnDraft = await upload(app, draftId, seller.token, [
      { name: 'a.png', data: imageBytes('png') },
    ]);
    t.is(ownerOnDraft.status, 201);
    t.is(ownerOnDraft.body.images.length, 1);
    const strangerDelete = await app.request(
      'DELETE',
      `/api/v1/products/${draftId}/images/${ownerOnDraft.body.images[0].id}`,
      { token: otherSeller.token },
    );
    t.is(strangerDelete.status, 403);
    t.like(strangerDelete.body, { status: 403, code: 'FORBIDDEN' });
    t.is((await imageRows(app, draftId)).length, 1);
  },
);

test.serial(
  'the owner deletes an image: 204, row and file gone, URL 404, the others keep their order',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const up = await upload(
      app,
      productId,
      seller.token,
      [1, 2, 3].map((n) => ({ name: `p${n}.png`, data: imageBytes('png') })),
    );
    t.is(up.status, 201);
    const [first, middle, last] = up.body.images;
    const res = await app.request('DELETE', `/api/v1/products/${productId}/images/${middle.id}`, {
      token: seller.token,
    });
    t.is(res.status, 204);
    t.is(res.text, '');
    t.deepEqual(
      (await imageRows(app, productId)).map((row) => ({
        id: row.id,
        imageUrl: row.image_url,
        displayOrder: row.display_order,
      })),
      [first, last],
    );
    t.deepEqual(
      filesUnder(productDir(app, productId)),
      [first, last].map((image) => path.basename(image.imageUrl)).sort(),
    );
    const gone = await app.request('GET', middle.imageUrl);
    t.is(gone.status, 404);
    t.is(gone.body.code, 'NOT_FOUND');

    // A freed slot can be used again, after the remaining images.
    const again = await upload(app, productId, seller.token, [{ name: 'p4.gif', data: imageBytes('gif') }]);
    t.is(again.status, 201);
    t.deepEqual(
      again.body.images.map((image: { id: number; displayOrder: number }) => image.displayOrder),
      [1, 3, 4],
    );

    const twice = await app.request('DELETE', `/api/v1/products/${productId}/images/${middle.id}`, {
      token: seller.token,
    });
    t.is(twice.status, 404);
    t.is(twice.body.code, 'NOT_FOUND');
  },
);

test.serial('delete by another seller or a buyer is 403, by nobody 401, and the image stays', async (t) => {
  const productId = await createProduct(app, seller.id);
  const up = await upload(app, productId, seller.token, [{ name: 'p.jpg', data: imageBytes('jpeg') }]);
  const imageId = up.body.images[0].id;
  const url = `/api/v1/products/${productId}/images/${imageId}`;
  const other = await app.request('DELETE', url, { token: otherSeller.token });
  t.is(other.status, 403);
  t.is(other.body.code, 'FORBIDDEN');
  const asBuyer = await app.request('DELETE', url, { token: buyer.token });
  t.is(asBuyer.status, 403);
  t.is(asBuyer.body.code, 'FORBIDDEN');
  const anonymous = await app.request('DELETE', url);
  t.is(anonymous.status, 401);
  t.is((await imageRows(app, productId)).length, 1);
  t.is(filesUnder(productDir(app, productId)).length, 1);
  t.is((await app.request('GET', up.body.images[0].imageUrl)).status, 200);
});

test.serial('delete of an image of another product is 404 and deletes nothing', async (t) => {
  const productA = await createProduct(app, seller.id);
  const productB = await createProduct(app, seller.id);
  const up = await upload(app, productA, seller.token, [{ name: 'p.jpg', data: imageBytes('jpeg') }]);
  const res = await app.request('DELETE', `/api/v1/products/${productB}/images/${up.body.images[0].id}`, {
    token: seller.token,
  });
  t.is(res.status, 404);
  t.is(res.body.code, 'NOT_FOUND');
  t.is((await imageRows(app, productA)).length, 1);
});

test.serial('upload and delete announce productsChanged for the product, scoped to its images', async (t) => {
  const productId = await createProduct(app, seller.id);
  const seen: number[] = [];
  const off = app.bundle.services.events.on('productsChanged', ({ productIds, scope }) => {
    if (!productIds.includes(productId)) return;
    t.deepEqual(productIds, [productId]);
    seen.push(productId);
    t.is(scope, 'images');
  });
  try {
    const up = await upload(app, productId, seller.token, [{ name: 'p.png', data: imageBytes('png') }]);
    t.is(up.status, 201);
    t.deepEqual(seen, [productId]);
    const del = await app.request('DELETE', `/api/v1/products/${productId}/images/${up.body.images[0].id}`, {
      token: seller.token,
    });
    t.is(del.status, 204);
    t.deepEqual(seen, [productId, productId]);
    const refused = await upload(app, productId, seller.token, [
      { name: 'p.png', data: Buffer.from('text') },
    ]);
    t.is(refused.status, 400);
    t.deepEqual(seen, [productId, productId]);
  } finally {
    off();
  }
});

test.serial(
  'the cached product detail shows the images right after an upload and after a delete',
  async (t) => {
    const productId = await createProduct(app, seller.id);
    const before = await app.request('GET', `/api/v1/products/${productId}`);
    t.is(before.status, 200);
    t.deepEqual(before.body.images, []);
    const cached = await app.request('GET', `/api/v1/products/${productId}`);
    t.deepEqual(cached.body.images, []);

    const up = await upload(app, productId, seller.token, [
      { name: 'a.png', data: imageBytes('png') },
      { name: 'b.jpg', data: imageBytes('jpeg') },
    ]);
    t.is(up.status, 201);
    const after = await app.request('GET', `/api/v1/products/${productId}`);
    t.is(after.status, 200);
    t.deepEqual(after.body.images, up.body.images);

    const del = await app.request('DELETE', `/api/v1/products/${productId}/images/${up.body.images[0].id}`, {
      token: seller.token,
    });
    t.is(del.status, 204);
    const afterDelete = await app.request('GET', `/api/v1/products/${productId}`);
    t.deepEqual(afterDelete.body.images, [up.body.images[1]]);
  },
);
