// The newcomer's path with the seeded demo accounts: each logs in with its documented development
// password and sees its own role; the admin lists members.
import test from 'ava';
import { DEFAULT_SEED_PASSWORDS } from '../../lib/config';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ env: { SEED_ON_START: 'true' } });
});
test.after.always(async () => {
  await app?.close();
});

const accounts = [
  { email: 'admin@marketplace.test', password: DEFAULT_SEED_PASSWORDS.admin, role: 'ADMIN' },
  { email: 'seller@marketplace.test', password: DEFAULT_SEED_PASSWORDS.seller, role: 'SELLER' },
  { email: 'buyer@marketplace.test', password: DEFAULT_SEED_PASSWORDS.buyer, role: 'BUYER' },
];

for (const account of accounts) {
  test(`seeded ${account.role} logs in and reads its profile`, async (t) => {
    const login = await app.request('POST', '/api/v1/auth/login', {
      body: { email: account.email, password: account.password },
    });
    t.is(login.status, 200);
    const me = await app.request('GET', '/api/v1/members/me', { token: login.body.accessToken });
    t.is(me.status, 200);
    t.is(me.body.email, account.email);
    t.is(me.body.role, account.role);
    t.is(me.body.businessNumber === null, account.role !== 'SELLER');
  });
}

test('seeded admin lists the seeded members by role', async (t) => {
  const login = await app.request('POST', '/api/v1/auth/login', {
    body: { email: accounts[0].email, password: accounts[0].password },
  });
  const res = await app.request('GET', '/api/v1/admin/members?keyword=@marketplace.test', {
    token: login.body.accessToken,
  });
  t.is(res.status, 200);
  t.is(res.body.totalElements, 3);
  t.deepEqual(res.body.content.map((m: { role: string }) => m.role).sort(), ['ADMIN', 'BUYER', 'SELLER']);
  const sellers = await app.request('GET', '/api/v1/admin/members?role=SELLER&keyword=MARKETPLACE', {
    token: login.body.accessToken,
  });
  t.deepEqual(
    sellers.body.content.map((m: { email: string }) => m.email),
    ['seller@marketplace.test'],
  );
});
