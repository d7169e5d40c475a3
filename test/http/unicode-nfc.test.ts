// Text in a body or a query is taken in Unicode NFC (lib/http/validate.ts), so "é" sent as one code point or as
// "e" + U+0301 is one text wherever it is stored, compared or searched; passwords are taken exactly as sent.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct, uniq, type TestMember } from '../helpers/factories';

let app: TestApp;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  admin = await createMember(app, 'ADMIN');
});
test.after.always(async () => {
  await app?.close();
});

const nfd = (text: string) => text.normalize('NFD');
const nfc = (text: string) => text.normalize('NFC');

test('signup: the name is stored in NFC, the password byte for byte as sent', async (t) => {
  const email = `nfc-${uniq()}@example.test`;
  const password = nfd('Pässwörd-123');
  t.not(password, nfc(password));
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    body: { email, password, name: nfd(' Zoë Müller '), phone: '010-1234-5678', role: 'BUYER' },
  });
  t.is(signup.status, 201, signup.text);
  t.is(signup.body.name, nfc('Zoë Müller'));
  const login = (pass: string) =>
    app.request('POST', '/api/v1/auth/login', { body: { email, password: pass } });
  t.is((await login(password)).status, 200);
  const composed = await login(nfc(password));
  t.is(composed.status, 401);
  t.is(composed.body.code, 'INVALID_CREDENTIALS');
});

test('a member renamed in NFD is found by the admin keyword in either spelling', async (t) => {
  const member = await createMember(app, 'BUYER');
  const name = `Renée ${uniq()}`;
  const renamed = await app.request('PATCH', '/api/v1/members/me', {
    token: member.token,
    body: { name: nfd(name) },
  });
  t.is(renamed.status, 200, renamed.text);
  t.is(renamed.body.name, nfc(name));
  for (const keyword of [nfc(name), nfd(name.toUpperCase())]) {
    const found = await app.request('GET', `/api/v1/admin/members?keyword=${encodeURIComponent(keyword)}`, {
      token: admin.token,
    });
    t.is(found.status, 200, found.text);
    t.deepEqual(
      found.body.content.map((m: { id: number }) => m.id),
      [member.id],
      keyword,
    );
  }
});

test('an order’s shipping address is stored in NFC', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const buyer = await createMember(app, 'BUYER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
  const address = {
    zipCode: '04524',
    address: nfd('Rue de la Paix, Saint-Étienne'),
    addressDetail: nfd('Bâtiment B'),
    receiverName: nfd('Zoë'),
    receiverPhone: '010-0000-0000',
  };
  const placed = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
  });
  t.is(placed.status, 201, placed.text);
  t.deepEqual(placed.body.orders[0].shippingAddress, {
    ...address,
    address: nfc(address.address),
    addressDetail: nfc(address.addressDetail),
    receiverName: nfc(address.receiverName),
  });
  const read = await app.request('GET', `/api/v1/orders/${placed.body.orders[0].id}`, { token: buyer.token });
  t.is(read.status, 200);
  t.is(read.body.shippingAddress.receiverName, nfc('Zoë'));
});
