// Keyword search compares names exactly apart from case on both databases: no accent or emoji folding
// (MariaDB's default collations would fold both).
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let categoryId: number;
let seller: TestMember;
const ids: Record<string, number> = {};
test.before(async () => {
  app = await startTestApp();
  seller = await createMember(app, 'SELLER');
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

test.serial('a name sent in NFD is stored in NFC, and the keyword finds it in either spelling', async (t) => {
  const composed = 'Crème brûlée torch'.normalize('NFC');
  const decomposed = composed.normalize('NFD');
  t.not(composed, decomposed);
  const created = await app.request('POST', '/api/v1/products', {
    token: seller.token,
    body: { categoryId, name: `  ${decomposed} `, description: decomposed, price: 9.5, stockQuantity: 1 },
  });
  t.is(created.status, 201, created.text);
  t.is(created.body.name, composed);
  t.is(created.body.description, composed);
  for (const keyword of ['brûlée', 'BRÛLÉE'.normalize('NFD'), 'crème'.normalize('NFD')]) {
    const found = await search(keyword);
    t.is(found.status, 200);
    t.deepEqual(found.names, [composed], keyword);
  }
  const renamed = await app.request('PATCH', `/api/v1/products/${created.body.id}`, {
    token: seller.token,
    body: { name: 'Pâte torch'.normalize('NFD') },
  });
  t.is(renamed.status, 200, renamed.text);
  t.is(renamed.body.name, 'Pâte torch'.normalize('NFC'));
  t.deepEqual((await search('pâte')).names, ['Pâte torch'.normalize('NFC')]);
});
