import path from 'node:path';
import knexFactory from 'knex';
import test, { type ExecutionContext } from 'ava';
import { request, startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import {
  imageBytes,
  imageForm,
  imageRows,
  productDir,
  tmpFiles,
  upload,
  filesUnder,
  startSecondProcess,
  type FormFile,
  type ServiceProcess,
} from './images-fixtures';

let app: TestApp;
// A second process of the service on the same database (and the same UPLOAD_DIR): its per-product lock is
// its own, so only the database guard stands between the two.
let twin: ServiceProcess;
let third: ServiceProcess;
let seller: TestMember;

test.before(async () => {
  app = await startTestApp();
  [twin, third] = await Promise.all([startSecondProcess(app), startSecondProcess(app)]);
  seller = await createMember(app, 'SELLER');
});
test.after.always(async () => {
  await twin?.stop();
  await third?.stop();
  await app?.close();
});

const uploadVia = (service: ServiceProcess, productId: number, token: string, files: FormFile[]) =>
  request(service.url, 'POST', `/api/v1/products/${productId}/images`, { token, raw: imageForm(files) });
const uploadViaTwin = (productId: number, token: string, files: FormFile[]) =>
  uploadVia(twin, productId, token, files);

const threeImages = () => [
  { name: 'a.jpg', data: imageBytes('jpeg', 64 * 1024) },
  { name: 'b.png', data: imageBytes('png', 64 * 1024) },
  { name: 'c.gif', data: imageBytes('gif', 64 * 1024) },
];

/** Exactly one of the two uploads won; rows and files agree and stay within 5. */
async function assertOneWinner(
  t: ExecutionContext,
  productId: number,
  results: Array<{ status: number; body: any }>,
) {
  const statuses = results.map((res) => res.status).sort();
  t.deepEqual(statuses, [201, 400]);
  const winner = results.find((res) => res.status === 201)!;
  const loser = results.find((res) => res.status === 400)!;
  t.is(loser.body.code, 'IMAGE_LIMIT_EXCEEDED');
  t.is(winner.body.images.length, 3);

  const rows = await imageRows(app, productId);
  t.is(rows.length, 3);
  t.deepEqual(
    rows.map((row) => row.id),
    winner.body.images.map((image: { id: number }) => image.id),
  );
  t.deepEqual(filesUnder(productDir(app, productId)), rows.map((row) => row.file_name).sort());
  t.deepEqual(
    rows.map((row) => path.basename(row.image_url)),
    rows.map((row) => row.file_name),
  );
  t.deepEqual(tmpFiles(app), []);
}

test.serial(
  'two parallel uploads of 3 images onto an empty product: exactly one succeeds (one process)',
  async (t) => {
    for (let round = 0; round < 3; round++) {
      const productId = await createProduct(app, seller.id);
      const results = await Promise.all([
        upload(app, productId, seller.token, threeImages()),
        upload(app, productId, seller.token, threeImages()),
      ]);
      await assertOneWinner(t, productId, results);
    }
  },
);

test.serial(
  'two parallel uploads through two processes on one database: the database guard holds',
  async (t) => {
    for (let round = 0; round < 3; round++) {
      const productId = await createProduct(app, seller.id);
      const results = await Promise.all([
        upload(app, productId, seller.token, threeImages()),
        uploadViaTwin(productId, seller.token, threeImages()),
      ]);
      await assertOneWinner(t, productId, results);
    }
  },
);

test.serial('many parallel single-image uploads never exceed 5 in total', async (t) => {
  const productId = await createProduct(app, seller.id);
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      i % 2 === 0
        ? upload(app, productId, seller.token, [{ name: `p${i}.png`, data: imageBytes('png') }])
        : uploadViaTwin(productId, seller.token, [{ name: `p${i}.png`, data: imageBytes('png') }]),
    ),
  );
  const statuses = results.map((res) => res.status);
  t.is(statuses.filter((status) => status === 201).length, 5);
  t.is(statuses.filter((status) => status === 400).length, 3);
  for (const res of results.filter((r) => r.status === 400)) t.is(res.body.code, 'IMAGE_LIMIT_EXCEEDED');
  const rows = await imageRows(app, productId);
  t.is(rows.length, 5);
  t.deepEqual(filesUnder(productDir(app, productId)), rows.map((row) => row.file_name).sort());
  t.deepEqual(
    rows.map((row) => row.display_order),
    [1, 2, 3, 4, 5],
  );
});

/**
 * Holds a lock that the uploads must queue behind, so both of them are inside their transactions at the
 * same time when it is released (without it, their windows rarely overlap and a missing guard could pass).
 * SQLite: the database write lock (BEGIN IMMEDIATE on a connection of our own). MySQL: a gap lock on the
 * product's image rows, which blocks inserts (and locking reads) of image rows of that product but not
 * the product row itself; we wait until both uploads are blocked, then release.
 */
async function withHeldLock(productId: number, uploads: () => Array<Promise<{ status: number; body: any }>>) {
  if (app.config.database.client === 'sqlite') {
    const holder = knexFactory({
      client: 'better-sqlite3',
      connection: { filename: app.config.database.filename },
      useNullAsDefault: true,
    });
    try {
      await holder.raw('BEGIN IMMEDIATE');
      const pending = uploads();
      await new Promise((resolve) => setTimeout(resolve, 700));
      await holder.raw('COMMIT');
      return await Promise.all(pending);
    } finally {
      await holder.destroy();
    }
  }
  const trx = await app.db.transaction();
  let pending: Array<Promise<{ status: number; body: any }>>;
  try {
    await trx('product_images').where('product_id', productId).forUpdate();
    pending = uploads();
    // Both uploads are blocked once two statements of our database sit in the processlist.
    for (let i = 0; i < 400; i++) {
      const [[{ blocked }]] = await app.db.raw(
        "SELECT COUNT(*) AS blocked FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND COMMAND = 'Query' AND ID <> CONNECTION_ID()",
      );
      if (Number(blocked) >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  } finally {
    await trx.commit();
  }
  return Promise.all(pending);
}

test.serial(
  'two uploads from two processes held at the same point, then released: exactly one succeeds',
  async (t) => {
    for (let round = 0; round < 2; round++) {
      const productId = await createProduct(app, seller.id);
      const results = await withHeldLock(productId, () => [
        uploadVia(twin, productId, seller.token, threeImages()),
        uploadVia(third, productId, seller.token, threeImages()),
      ]);
      await assertOneWinner(t, productId, results);
    }
  },
);

test.serial(
  "uploads by different sellers to their own new products at once all succeed (no deadlock between products' image rows)",
  async (t) => {
    // New products have no image rows, so on MySQL their slots in the image index share one gap: a locking read
    // there from two transactions, then an insert from each, is a deadlock and one upload would be refused.
    const sellers = await Promise.all(Array.from({ length: 6 }, () => createMember(app, 'SELLER')));
    for (let round = 0; round < 3; round++) {
      const productIds = await Promise.all(sellers.map((owner) => createProduct(app, owner.id)));
      const results = await Promise.all(
        productIds.map((productId, i) =>
          uploadVia(i % 2 === 0 ? twin : third, productId, sellers[i].token, threeImages()),
        ),
      );
      t.deepEqual(
        results.map((res) => [res.status, res.body.code]),
        productIds.map(() => [201, undefined]),
      );
      for (const [i, productId] of productIds.entries()) {
        t.is(results[i].body.images.length, 3);
        t.deepEqual(
          (await imageRows(app, productId)).map((row) => row.display_order),
          [1, 2, 3],
        );
      }
    }
  },
);
