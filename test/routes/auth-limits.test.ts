// Signup and refresh limits (per client address and in total, shared through the database), and
// PATCH /members/me's currentPassword check, throttled per member in a bucket of its own.
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

test('PATCH /members/me: wrong currentPasswords count per member over every address (5, then 429); failed logins, even a full e-mail ceiling, never block a password change', async (t) => {
  const app = await startTestApp({ env: { ...PROXIED, LOGIN_EMAIL_LIMIT: '3/900' } });
  t.teardown(() => app.close());
  const member = await createMember(app);
  const stored = await app.db('members').where('id', member.id).first('password_hash', 'token_version');
  const patch = (currentPassword: string, from: string, password = 'New-password-1') =>
    app.request('PATCH', '/api/v1/members/me', {
      token: member.token,
      body: { password, currentPassword },
      headers: { 'X-Forwarded-For': from },
    });
  // Someone fails logins for the member's e-mail from several addresses: the e-mail ceiling (3 here) is full.
  for (const from of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      body: { email: member.email, password: 'Wrong-pass-1' },
      headers: { 'X-Forwarded-For': from },
    });
    assertError(t, res, 401, 'INVALID_CREDENTIALS');
  }
  const locked = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: member.password },
    headers: { 'X-Forwarded-For': '198.51.100.9' },
  });
  assertError(t, locked, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/login');
  // Wrong current passwords from five addresses fill the member's own bucket (before, the e-mail ceiling above
  // already refused the first with 429, even the right password).
  for (const from of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4', '203.0.113.5']) {
    const res = await patch('Wrong-pass-1', from);
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
    t.deepEqual(res.body.errors, [{ field: 'currentPassword', message: 'currentPassword is incorrect' }]);
  }
  // A 6th, from yet another address and with the right password: refused, and the password is unchanged.
  const blocked = await patch(member.password, '203.0.113.6');
  assertError(t, blocked, 429, 'TOO_MANY_REQUESTS', '/api/v1/members/me');
  t.is(blocked.body.message, 'Too many wrong current passwords for this account');
  t.true(Number(blocked.headers.get('retry-after')) > 890);
  t.deepEqual(await app.db('members').where('id', member.id).first('password_hash', 'token_version'), stored);
});

test('PATCH /members/me: a signed-in member changes the password while its login is held by the e-mail ceiling', async (t) => {
  const app = await startTestApp({ env: { ...PROXIED, LOGIN_EMAIL_LIMIT: '3/900' } });
  t.teardown(() => app.close());
  const member = await createMember(app);
  for (const from of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
    await app.request('POST', '/api/v1/auth/login', {
      body: { email: member.email, password: 'Wrong-pass-1' },
      headers: { 'X-Forwarded-For': from },
    });
  }
  const changed = await app.request('PATCH', '/api/v1/members/me', {
    token: member.token,
    body: { password: 'New-password-1', currentPassword: member.password },
    headers: { 'X-Forwarded-For': '198.51.100.9' },
  });
  t.is(changed.status, 200, changed.text);
  t.is(changed.body.id, member.id);
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
