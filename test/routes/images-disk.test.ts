import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct, uniq, type TestMember } from '../helpers/factories';
import {
  decoded,
  filesUnder,
  IMAGE_SIZE,
  imageBytes,
  imageRows,
  productDir,
  tmpFiles,
} from './images-fixtures';

let app: TestApp;
let seller: TestMember;

test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
});
test.after.always(async () => {
  await app?.close();
});

const tmpRoot = () => path.join(app.config.uploadDir, 'tmp');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sizes of the files under the temporary upload directory right now. */
function tmpSizes(): number[] {
  return tmpFiles(app).map((entry) => fs.statSync(path.join(tmpRoot(), entry)).size);
}

test.serial('an upload streams to a temporary file on disk while the body is still arriving', async (t) => {
  const productId = await createProduct(app, seller.id);
  const boundary = `----image-test-${uniq()}`;
  const data = imageBytes('png', 4 * 1024 * 1024);
  const half = 2 * 1024 * 1024;
  const url = new URL(app.url);
  let response = '';
  const req = http.request({
    host: url.hostname,
    port: url.port,
    method: 'POST',
    path: `/api/v1/products/${productId}/images`,
    headers: {
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
      Authorization: `Bearer ${seller.token}`,
    },
  });
  const done = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk) => (response += chunk));
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  done.catch(() => undefined); // awaited below; never an unhandled rejection if an assertion fails first
  req.write(
    `--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  req.write(data.subarray(0, half));

  // The first half is on disk, in the request's temporary directory, before the rest is even sent. The
  // multipart parser may hold back a few trailing bytes that could be the start of the boundary.
  const expected = half - (boundary.length + 8);
  let sizes: number[] = [];
  for (let i = 0; i < 200 && !(sizes.length === 1 && sizes[0] >= expected); i++) {
    await sleep(20);
    sizes = tmpSizes();
  }
  t.is(sizes.length, 1);
  t.true(sizes[0] >= expected, `temporary file holds ${sizes[0]} bytes`);
  t.deepEqual(await imageRows(app, productId), []);

  req.write(data.subarray(half));
  req.end(`\r\n--${boundary}--\r\n`);
  t.is(await done, 201);
  const body = JSON.parse(response);
  t.is(body.images.length, 1);
  const [name] = filesUnder(productDir(app, productId));
  t.is(path.basename(body.images[0].imageUrl), name);
  // What is stored is the re-encoded image, not the uploaded bytes.
  const stored = fs.readFileSync(path.join(productDir(app, productId), name));
  t.deepEqual(await decoded(stored), { format: 'png', ...IMAGE_SIZE, exif: false });
  t.true(stored.length < data.length);
  t.deepEqual(tmpFiles(app), []);
  t.deepEqual(fs.readdirSync(tmpRoot()), []);
});

test.serial(
  'temporary upload directories left by a crash are swept at start when older than an hour',
  async (t) => {
    const stale = path.join(tmpRoot(), `stale-${uniq()}`);
    const fresh = path.join(tmpRoot(), `fresh-${uniq()}`);
    for (const dir of [stale, fresh]) {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'partial'), 'half an upload');
    }
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    fs.utimesSync(stale, twoHoursAgo, twoHoursAgo);

    // A second start of the service on the same data directory runs the sweep.
    const again = await startTestApp({ database: app.database });
    try {
      t.false(fs.existsSync(stale));
      t.true(fs.existsSync(path.join(fresh, 'partial')));
    } finally {
      await again.close();
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  },
);
