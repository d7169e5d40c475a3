// Signup and refresh limits (per client address and in total, shared through the database), and
// PATCH /members/me's currentPassword check sharing the login throttle's buckets.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, login, uniq } from '../helpers/factories';

const PROXIED = { TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '1' };

const signup = (app: TestApp, from: string) =>
  app.request('POST', '/api/v1/auth/signup', {
    body: {
      email: `new-${uniq()}@example.test`,
      password: 'Secret-pass-1',
      name: 'New Buyer',
      phone: '010-9999-0000',
      role: 'BUYER',
    },
    headers: { 'X-Forwarded-For': from },
  });

test('signup: per-address limit → 429 with Retry-After, nothing created; another address still signs up', async (t) => {
  const app = await startTestApp({ env: { ...PROXIED, SIGNUP_ADDRESS_LIMIT: '2/3600' } });
  t.teardown(() => app.close());
  for (let i = 0; i < 2; i++) t.is((await signup(app, '203.0.113.5')).status, 201);
  const refused = await signup(app, '203.0.113.5');
  assertError(t, refused, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/signup');
  t.is(refused.body.message, 'Too many signup requests from this address');
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.true(retryAfter > 3590 && retryAfter <= 3600, String(retryAfter));
  t.is(Number((await app.db('members').count({ n: '*' }))[0].n), 2);
  t.is((await signup(app, '203.0.113.6')).status, 201);
});

test('signup: the global limit bounds a flood from many addresses', async (t) => {
  const app = await startTestApp({ env: { ...PROXIED, SIGNUP_GLOBAL_LIMIT: '3/3600' } });
  t.teardown(() => app.close());
  for (let i = 1; i <= 3; i++) t.is((await signup(app, `192.0.2.${i}`)).status, 201);
  const refused = await signup(app, '192.0.2.200');
  assertError(t, refused, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/signup');
  t.is(refused.body.message, 'Too many signup requests; try again later');
  t.truthy(refused.headers.get('retry-after'));
});

test('refresh: per-address and global limits → 429 with Retry-After before the token is touched', async (t) => {
  const app = await startTestApp({
    env: { ...PROXIED, REFRESH_ADDRESS_LIMIT: '2/60', REFRESH_GLOBAL_LIMIT: '4/60' },
  });
  t.teardown(() => app.close());
  const member = await createMember(app);
  let { refreshToken } = await login(app, member);
  const refresh = (from: string) =>
    app.request('POST', '/api/v1/auth/refresh', {
      body: { refreshToken },
      headers: { 'X-Forwarded-For': from },
    });
  for (let i = 0; i < 2; i++) {
    const res = await refresh('198.51.100.1');
    t.is(res.status, 200);
    refreshToken = res.body.refreshToken;
  }
  const refused = await refresh('198.51.100.1');
  assertError(t, refused, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/refresh');
  t.is(refused.body.message, 'Too many refresh requests from this address');
  t.true(Number(refused.headers.get('retry-after')) <= 60);
  // The refused request did not use the token up: it still works from another address.
  const other = await refresh('198.51.100.2');
  t.is(other.status, 200);
  refreshToken = other.body.refreshToken;
  // The 3 counted above (the refused one included) + this one reach the global 4; the next is refused.
  t.is((await refresh('198.51.100.3')).status, 200);
  const global = await refresh('198.51.100.4');
  assertError(t, global, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/refresh');
  t.is(global.body.message, 'Too many refresh requests; try again later');
});

test('PATCH /members/me: wrong currentPassword attempts share the login throttle (e-mail + address)', async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  const member = await createMember(app);
  const patch = (currentPassword: string) =>
    app.request('PATCH', '/api/v1/members/me', {
      token: member.token,
      body: { password: 'New-password-1', currentPassword },
    });
  // 3 failed logins and 2 wrong currentPasswords fill the same (e-mail, address) bucket of 5.
  for (let i = 0; i < 3; i++) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      body: { email: member.email, password: 'Wrong-pass-1' },
    });
    assertError(t, res, 401, 'INVALID_CREDENTIALS');
  }
  for (let i = 0; i < 2; i++) {
    const res = await patch('Wrong-pass-1');
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
    t.deepEqual(res.body.errors, [{ field: 'currentPassword', message: 'currentPassword is incorrect' }]);
  }
  // Now even the right current password is refused, and the password is unchanged.
  const blocked = await patch(member.password);
  assertError(t, blocked, 429, 'TOO_MANY_REQUESTS', '/api/v1/members/me');
  t.true(Number(blocked.headers.get('retry-after')) > 890);
  const loginBlocked = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: member.password },
  });
  assertError(t, loginBlocked, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/login');
  // From another address the old password still logs in: nothing was changed.
  const tokens = await app.bundle.services.auth.login(
    { email: member.email, password: member.password },
    '203.0.113.50',
  );
  t.is(tokens.tokenType, 'Bearer');
});

test('PATCH /members/me: a right currentPassword clears the counter, like a successful login', async (t) => {
  const app = await startTestApp();
  t.teardown(() => app.close());
  const member = await createMember(app);
  let token = member.token;
  const patch = (currentPassword: string, password: string) =>
    app.request('PATCH', '/api/v1/members/me', { token, body: { password, currentPassword } });
  for (let i = 0; i < 4; i++) t.is((await patch('Wrong-pass-1', 'New-password-1')).status, 400);
  const changed = await patch(member.password, 'New-password-1');
  t.is(changed.status, 200, JSON.stringify(changed.body));
  t.is(changed.body.id, member.id);
  // A password change ends the member's access tokens (token version): log in again with the new password.
  const login = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: 'New-password-1' },
  });
  t.is(login.status, 200, JSON.stringify(login.body));
  token = login.body.accessToken;
  for (let i = 0; i < 5; i++) t.is((await patch('Wrong-pass-1', 'New-password-2')).status, 400);
  assertError(t, await patch('New-password-1', 'New-password-2'), 429, 'TOO_MANY_REQUESTS');
});
