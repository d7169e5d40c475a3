// Keyword search compares names exactly apart from case on both databases: no accent or emoji folding
// (MariaDB's default collations would fold both).
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, createProduct } from '../helpers/factories';

let app: TestApp;
let categoryId: number;
const ids: Record<string, number> = {};
test.before(async () => {
  app = await startTestApp();
  const seller = await createMember(app, 'SELLER');
  categoryId = await createCategory(app);
  for (const name of ['😀😀 mug', 'café noir', 'Cafe plain', 'Blue LAMP'])
    ids[name] = await createProduct(app, seller.id, { categoryId, name });
});
test.after.always(async () => {
  await app?.close();
});

async function search(keyword: string) {
  const res = await app.request(
    'GET',
    `/api/v1/products?categoryId=${categoryId}&keyword=${encodeURIComponent(keyword)}`,
  );
  return {
    status: res.status,
    body: res.body,
    names: res.body.content?.map((p: { name: string }) => p.name),
  };
}

test('an emoji matches only itself: "😁" does not find "😀😀", "😀" does', async (t) => {
  const other = await search('😁');
  t.is(other.status, 200);
  t.like(other.body, { totalElements: 0, content: [] });
  const same = await search('😀');
  t.is(same.status, 200);
  t.deepEqual(same.names, ['😀😀 mug']);
  t.is(same.body.content[0].id, ids['😀😀 mug']);
});

test('case is folded, accents are not: "CAFÉ" finds "café" only, "cafe" finds "Cafe" only, "lamp" finds "LAMP"', async (t) => {
  const accented = await search('CAFÉ');
  t.is(accented.status, 200);
  t.deepEqual(accented.names, ['café noir']);
  t.is(accented.body.totalElements, 1);
  const plain = await search('cafe');
  t.deepEqual(plain.names, ['Cafe plain']);
  t.deepEqual((await search('lamp')).names, ['Blue LAMP']);
});
