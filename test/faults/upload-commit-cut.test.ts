// An image upload whose COMMIT gets no answer (the link is cut right after the COMMIT was sent, so the server
// applied it): the service looks for the rows before it removes the files it moved, so no product image row ever
// points at a file that is gone. Cut before the COMMIT reaches the server instead: nothing is stored, no file is
// left, and the answer is a 503 with Retry-After. When not even the check gets an answer, the product is announced
// all the same, so its cached detail shows the images once they are read again.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { onMariaDb, SKIPPED_ON_SQLITE, startBehindProxy, type ProxiedService } from './fault-fixtures';
import { filesUnder, imageBytes, productDir, upload } from '../routes/images-fixtures';

if (!onMariaDb) {
  test.skip(SKIPPED_ON_SQLITE, () => {});
} else {
  let service: ProxiedService;

  test.before(async () => {
    service = await startBehindProxy({ world: { buyers: 1, products: 2, stock: 5 } });
  });
  test.after.always(() => service?.close());

  const rows = (productId: number) =>
    service
      .db('product_images')
      .where('product_id', productId)
      .orderBy('id')
      .select('file_name', 'image_url');

  test.serial(
    'the COMMIT applied but its answer was lost: 201 with the images, and every row has its file',
    async (t) => {
      const [productId] = [...service.world.initial.keys()];
      const seller = service.world.sellers[0];
      const cut = service.proxy.cutOn('COMMIT', { forward: true, after: 'insert into `product_images`' });
      const res = await upload(service.app, productId, seller.token, [
        { name: 'a.png', data: imageBytes('png') },
        { name: 'b.jpg', data: imageBytes('jpeg') },
      ]);
      await cut;
      t.is(res.status, 201, res.text);
      const stored = await rows(productId);
      t.is(stored.length, 2);
      t.deepEqual(
        res.body.images.map((image: { imageUrl: string }) => image.imageUrl),
        stored.map((row: { image_url: string }) => row.image_url),
      );
      for (const row of stored as Array<{ file_name: string }>) {
        t.true(fs.existsSync(path.join(productDir(service.app, productId), row.file_name)), row.file_name);
      }
      // Served back.
      const served = await service.app.request('GET', stored[0].image_url);
      t.is(served.status, 200);
    },
  );

  test.serial(
    'cut before the COMMIT reaches the server: 503 with Retry-After, no row and no file',
    async (t) => {
      const productId = [...service.world.initial.keys()][1];
      const seller = service.world.sellers[1];
      const cut = service.proxy.cutOn('COMMIT', { forward: false, after: 'insert into `product_images`' });
      const res = await upload(service.app, productId, seller.token, [
        { name: 'a.png', data: imageBytes('png') },
      ]);
      await cut;
      t.is(res.status, 503, res.text);
      t.like(res.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
      t.truthy(res.headers.get('retry-after'));
      t.deepEqual(await rows(productId), []);
      t.deepEqual(filesUnder(productDir(service.app, productId)), []);
      // The service goes on: the same upload is stored now.
      const again = await upload(service.app, productId, seller.token, [
        { name: 'a.png', data: imageBytes('png') },
      ]);
      t.is(again.status, 201, again.text);
    },
  );

  test.serial(
    "no answer to the COMMIT and none to the check: 503, and the product's cached detail shows the images stored",
    async (t) => {
      const [productId] = [...service.world.initial.keys()];
      const seller = service.world.sellers[0];
      const detail = async () =>
        (await service.app.request('GET', `/api/v1/products/${productId}`)).body.images as Array<{
          imageUrl: string;
        }>;
      const before = await detail(); // cached now
      // The COMMIT reaches the server, then every connection is cut and refused for longer than the check tries.
      const cut = service.proxy.cutOn('COMMIT', {
        forward: true,
        after: 'insert into `product_images`',
        blackoutMs: 4_000,
      });
      const res = await upload(service.app, productId, seller.token, [
        { name: 'c.png', data: imageBytes('png') },
      ]);
      await cut;
      t.is(res.status, 503, res.text);
      t.like(res.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
      t.truthy(res.headers.get('retry-after'));
      const stored = await rows(productId);
      t.is(stored.length, before.length + 1, 'the COMMIT was applied');
      // Its rows may exist, so the files they name stay: no row ever points at a file that is gone.
      for (const row of stored)
        t.true(fs.existsSync(path.join(productDir(service.app, productId), row.file_name)), row.file_name);
      // Announced: once the database answers again, the detail is read again, not served from the cache filled
      // before the upload.
      let after = await service.app.request('GET', `/api/v1/products/${productId}`);
      for (const until = Date.now() + 10_000; after.status === 503 && Date.now() < until;) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        after = await service.app.request('GET', `/api/v1/products/${productId}`);
      }
      t.is(after.status, 200, after.text);
      t.deepEqual(
        (after.body.images as Array<{ imageUrl: string }>).map((image) => image.imageUrl),
        stored.map((row: { image_url: string }) => row.image_url),
      );
    },
  );

  test.serial(
    "an image's delete whose COMMIT was applied but not answered: 503, and the cached detail no longer lists it",
    async (t) => {
      const [productId] = [...service.world.initial.keys()];
      const seller = service.world.sellers[0];
      const detail = () => service.app.request('GET', `/api/v1/products/${productId}`);
      const before = (await detail()).body.images as Array<{ id: number; imageUrl: string }>; // cached now
      t.true(before.length > 0);
      const cut = service.proxy.cutOn('COMMIT', {
        forward: true,
        after: 'delete from `product_images`',
        blackoutMs: 3_000,
      });
      const res = await service.app.request(
        'DELETE',
        `/api/v1/products/${productId}/images/${before[0].id}`,
        {
          token: seller.token,
        },
      );
      await cut;
      t.is(res.status, 503, res.text);
      t.like(res.body, { status: 503, code: 'SERVICE_UNAVAILABLE' });
      t.is((await rows(productId)).length, before.length - 1, 'the COMMIT was applied');
      // Announced: once the database answers again the detail is read afresh, without the deleted image.
      let after = await detail();
      for (const until = Date.now() + 10_000; after.status === 503 && Date.now() < until;) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        after = await detail();
      }
      t.is(after.status, 200, after.text);
      t.deepEqual(
        (after.body.images as Array<{ id: number }>).map((image) => image.id),
        before.slice(1).map((image) => image.id),
      );
    },
  );
}
