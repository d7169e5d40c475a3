// Edges of the login throttle's buckets that the main throttle tests leave open: the (e-mail, address) pair
// counts an IPv6 client by its /64, a refused attempt gives back the points it took in the buckets before the
// full one, and PATCH /members/me's currentPassword bucket belongs to one member. A ceiling configured off is
// no bucket at all.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember } from '../helpers/factories';

const LOGIN = '/api/v1/auth/login';
const PROXIED = { TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '1' };
const PAIR_FULL = 'Too many failed logins for this account from this address';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const attempt = (app: TestApp, email: string, password: string, from: string) =>
  app.request('POST', LOGIN, { body: { email, password }, headers: { 'X-Forwarded-For': from } });

test('the (e-mail, address) pair counts an IPv6 client by its /64: five addresses of it fill one bucket', async (t) => {
  const app = await startTestApp({ env: PROXIED });
  t.teardown(() => app.close());
  const member = await createMember(app);
  // Every guess from another address of the same /64 (the address ceiling, 100, is far away).
  for (let i = 1; i <= 5; i++) {
    const res = await attempt(app, member.email, 'Wrong-pass-1', `2001:db8:9:1::${i}`);
    assertError(t, res, 401, 'INVALID_CREDENTIALS', LOGIN);
  }
  const refused = await attempt(app, member.email, member.password, '2001:db8:9:1:ffff::6');
  assertError(t, refused, 429, 'TOO_MANY_REQUESTS', LOGIN);
  t.is(refused.body.message, PAIR_FULL);
  t.true(Number(refused.headers.get('retry-after')) > 890);
  // Another /64 is another pair.
  const ok = await attempt(app, member.email, member.password, '2001:db8:9:2::1');
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.tokenType, 'Bearer');
});

test('an attempt refused by a full ceiling gives its point back to the pair it was counted in first', async (t) => {
  // The e-mail ceiling (2 in 8 s) is filled from two addresses; two logins from a third are refused by it. They
  // never reached the password check, so the third address's pair (2 a window here) holds none of them: once
  // the ceiling's window ends, its right password logs in (were they kept, the pair would be full: 2 of 2).
  const app = await startTestApp({
    env: { ...PROXIED, LOGIN_FAILURE_LIMIT: '2/900', LOGIN_EMAIL_LIMIT: '2/8' },
  });
  t.teardown(() => app.close());
  const member = await createMember(app);
  for (const from of ['198.51.100.1', '198.51.100.2']) {
    assertError(t, await attempt(app, member.email, 'Wrong-pass-1', from), 401, 'INVALID_CREDENTIALS', LOGIN);
  }
  let retryAfter = 0;
  for (let i = 0; i < 2; i++) {
    const refused = await attempt(app, member.email, member.password, '203.0.113.9');
    assertError(t, refused, 429, 'TOO_MANY_REQUESTS', LOGIN);
    t.is(refused.body.message, 'Too many failed logins for this account');
    retryAfter = Number(refused.headers.get('retry-after'));
  }
  t.true(retryAfter >= 1 && retryAfter <= 8, String(retryAfter));
  await sleep(retryAfter * 1000 + 200);
  const ok = await attempt(app, member.email, member.password, '203.0.113.9');
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.tokenType, 'Bearer');
});

test("PATCH /members/me: one member's wrong currentPasswords never block another member's password change", async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  const [guessed, other] = [await createMember(app), await createMember(app)];
  const change = (member: { token: string }, currentPassword: string) =>
    app.request('PATCH', '/api/v1/members/me', {
      token: member.token,
      body: { password: 'New-password-1', currentPassword },
    });
  for (let i = 0; i < 5; i++) {
    const res = await change(guessed, 'Wrong-pass-1');
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
    t.deepEqual(res.body.errors, [{ field: 'currentPassword', message: 'currentPassword is incorrect' }]);
  }
  const blocked = await change(guessed, guessed.password);
  assertError(t, blocked, 429, 'TOO_MANY_REQUESTS', '/api/v1/members/me');
  t.is(blocked.body.message, 'Too many wrong current passwords for this account');
  // The other member's own bucket is empty: a wrong guess is a 400, the right password changes it.
  const wrong = await change(other, 'Wrong-pass-1');
  assertError(t, wrong, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
  t.deepEqual(wrong.body.errors, [{ field: 'currentPassword', message: 'currentPassword is incorrect' }]);
  const changed = await change(other, other.password);
  t.is(changed.status, 200, changed.text);
  t.is(changed.body.id, other.id);
});

test('ceilings configured off are no buckets: failures from many addresses are all 401, the pair still limits', async (t) => {
  const app = await startTestApp({
    env: { ...PROXIED, LOGIN_EMAIL_LIMIT: 'off', LOGIN_ADDRESS_LIMIT: 'off', LOGIN_GLOBAL_LIMIT: 'off' },
  });
  t.teardown(() => app.close());
  const member = await createMember(app);
  // 21 failures from 21 addresses: more than the default e-mail ceiling (20) would let through.
  for (let i = 1; i <= 21; i++) {
    const res = await attempt(app, member.email, 'Wrong-pass-1', `198.51.100.${i}`);
    assertError(t, res, 401, 'INVALID_CREDENTIALS', LOGIN);
  }
  const ok = await attempt(app, member.email, member.password, '198.51.100.22');
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.tokenType, 'Bearer');
  // The (e-mail, address) pair is never off: its 6th attempt is refused.
  for (let i = 0; i < 4; i++) {
    assertError(
      t,
      await attempt(app, member.email, 'Wrong-pass-1', '198.51.100.1'),
      401,
      'INVALID_CREDENTIALS',
      LOGIN,
    );
  }
  const refused = await attempt(app, member.email, member.password, '198.51.100.1');
  assertError(t, refused, 429, 'TOO_MANY_REQUESTS', LOGIN);
  t.is(refused.body.message, PAIR_FULL);
});
