// An image upload whose COMMIT gets no answer (the link is cut right after the COMMIT was sent, so the server
// applied it): the service looks for the rows before it removes the files it moved, so no product image row ever
// points at a file that is gone. Cut before the COMMIT reaches the server instead: nothing is stored, no file is
// left, and the answer is a 503 with Retry-After.
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
}
