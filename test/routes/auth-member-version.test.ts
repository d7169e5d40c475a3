// A password change or a role change reaches access tokens within AUTH_MEMBER_CACHE_SECONDS (here 1 s; at most
// 60 s), not when they expire: every authenticated request checks the token's role and version (`ver`) against
// the member's, through a short cache. In the process that made the change it takes effect at once; another
// process on the same database follows within the cache's TTL (these processes form no cluster; in one, the
// `membersChanged` event reaches the others at once: test/cluster/app-cluster.test.ts).
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, type TestMember } from '../helpers/factories';

const TTL_SECONDS = 1;
let app: TestApp;
let other: TestApp;
test.before(async () => {
  app = await startTestApp({ env: { AUTH_MEMBER_CACHE_SECONDS: String(TTL_SECONDS) } });
  other = await startTestApp({
    database: app.database,
    env: { AUTH_MEMBER_CACHE_SECONDS: String(TTL_SECONDS) },
  });
});
test.after.always(async () => {
  await other?.close();
  await app?.close();
});

async function login(instance: TestApp, email: string, password: string) {
  const res = await instance.request('POST', '/api/v1/auth/login', { body: { email, password } });
  if (res.status !== 200) throw new Error(`login: ${res.status} ${res.text}`);
  return res.body as { accessToken: string; refreshToken: string };
}

/** Polls until `path` answers 401 with this token; the time it took, or null if it never did within `limitMs`. */
async function msUntilRefused(instance: TestApp, path: string, token: string, limitMs: number) {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    const res = await instance.request('GET', path, { token });
    if (res.status === 401) return { ms: Date.now() - started, res };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return null;
}

test('a password change ends the access tokens of the member: at once here, within the TTL elsewhere', async (t) => {
  const member: TestMember = await createMember(app, 'BUYER');
  const before = await login(app, member.email, member.password);
  // The other process has the member's version cached (from this request) when the change happens.
  t.is((await other.request('GET', '/api/v1/members/me', { token: before.accessToken })).status, 200);

  const changed = await app.request('PATCH', '/api/v1/members/me', {
    token: before.accessToken,
    body: { password: 'New-password-1', currentPassword: member.password },
  });
  t.is(changed.status, 200, changed.text);
  t.is(changed.body.email, member.email);

  const here = await app.request('GET', '/api/v1/members/me', { token: before.accessToken });
  assertError(t, here, 401, 'INVALID_TOKEN', '/api/v1/members/me');
  t.regex(here.body.message, /password or role changed/);

  const elsewhere = await msUntilRefused(other, '/api/v1/members/me', before.accessToken, 5000);
  t.truthy(elsewhere, 'the other process refuses the old token');
  t.true(elsewhere!.ms <= TTL_SECONDS * 1000 + 1000, `refused after ${elsewhere?.ms} ms`);
  assertError(t, elsewhere!.res, 401, 'INVALID_TOKEN', '/api/v1/members/me');

  // A new login carries the new version and works on both processes.
  const after = await login(app, member.email, 'New-password-1');
  for (const instance of [app, other]) {
    const me = await instance.request('GET', '/api/v1/members/me', { token: after.accessToken });
    t.is(me.status, 200, me.text);
    t.is(me.body.id, member.id);
  }
});

test('a role change (made in the database) refuses tokens of the old role within the TTL; a refresh gets the new role', async (t) => {
  const member = await createMember(app, 'BUYER');
  const session = await login(app, member.email, member.password);
  t.is((await app.request('GET', '/api/v1/orders', { token: session.accessToken })).status, 200);

  await app.db('members').where('id', member.id).update({ role: 'SELLER', business_number: '123-45-67890' });
  const refused = await msUntilRefused(app, '/api/v1/orders', session.accessToken, 5000);
  t.truthy(refused, 'the BUYER token is refused');
  t.true(refused!.ms <= TTL_SECONDS * 1000 + 1000, `refused after ${refused?.ms} ms`);
  assertError(t, refused!.res, 401, 'INVALID_TOKEN', '/api/v1/orders');

  const refreshed = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: session.refreshToken },
  });
  t.is(refreshed.status, 200, refreshed.text);
  const sellerOrders = await app.request('GET', '/api/v1/sellers/orders', {
    token: refreshed.body.accessToken,
  });
  t.is(sellerOrders.status, 200, sellerOrders.text);
  t.deepEqual(sellerOrders.body.content, []);
});

test('a deleted member: its tokens are refused on every authenticated route (401 INVALID_TOKEN)', async (t) => {
  const member = await createMember(app, 'BUYER');
  t.is((await other.request('GET', '/api/v1/orders', { token: member.token })).status, 200);
  await app.db('members').where('id', member.id).delete();
  const refused = await msUntilRefused(other, '/api/v1/orders', member.token, 5000);
  t.truthy(refused);
  assertError(t, refused!.res, 401, 'INVALID_TOKEN', '/api/v1/orders');
  t.regex(refused!.res.body.message, /no longer exists/);
});

test('a token issued after a password change is served at once by a process still caching the old version', async (t) => {
  // A process whose cache would hold the old version for a minute.
  const slow = await startTestApp({ database: app.database, env: { AUTH_MEMBER_CACHE_SECONDS: '60' } });
  t.teardown(() => slow.close());
  const member = await createMember(app, 'BUYER');
  const before = await login(app, member.email, member.password);
  t.is((await slow.request('GET', '/api/v1/members/me', { token: before.accessToken })).status, 200);

  const changed = await app.request('PATCH', '/api/v1/members/me', {
    token: before.accessToken,
    body: { password: 'New-password-2', currentPassword: member.password },
  });
  t.is(changed.status, 200, changed.text);
  const after = await login(app, member.email, 'New-password-2');
  const me = await slow.request('GET', '/api/v1/members/me', { token: after.accessToken });
  t.is(me.status, 200, me.text);
  t.is(me.body.id, member.id);
  // And that read brought the cache up to date: the old token is refused there at once, not after a minute.
  assertError(
    t,
    await slow.request('GET', '/api/v1/members/me', { token: before.accessToken }),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
});

test('cachesStale (change events may have been missed: a NATS reconnect) drops every cached member version', async (t) => {
  // A process whose cache would hold the old version for a minute, and a change it is never told of.
  const slow = await startTestApp({ database: app.database, env: { AUTH_MEMBER_CACHE_SECONDS: '60' } });
  t.teardown(() => slow.close());
  const member = await createMember(app, 'BUYER');
  t.is((await slow.request('GET', '/api/v1/members/me', { token: member.token })).status, 200);
  await app.db('members').where('id', member.id).increment('token_version', 1);
  t.is(
    (await slow.request('GET', '/api/v1/members/me', { token: member.token })).status,
    200,
    'cached: the change is not seen yet',
  );
  await slow.bundle.services.events.emit('cachesStale');
  assertError(
    t,
    await slow.request('GET', '/api/v1/members/me', { token: member.token }),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
});

test('two password changes checked at once against the same password: one applies, the other is 400', async (t) => {
  // One bcrypt operation at a time and a costly stored hash: both checks of the old password run before either
  // new hash is made, so both requests are past their check when the first commits.
  const serial = await startTestApp({ database: app.database, env: { BCRYPT_CONCURRENCY: '1' } });
  t.teardown(() => serial.close());
  const member = await createMember({ db: serial.db, tokens: serial.bundle.services.tokens, bcryptCost: 12 });
  const change = (password: string) =>
    serial.request('PATCH', '/api/v1/members/me', {
      token: member.token,
      body: { password, currentPassword: member.password },
    });
  const answers = await Promise.all([change('Victim-new-1'), change('Attacker-new-1')]);
  t.deepEqual(answers.map((res) => res.status).sort(), [200, 400], answers.map((res) => res.text).join('\n'));
  const refused = answers.find((res) => res.status === 400)!;
  assertError(t, refused, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
  t.deepEqual(refused.body.errors, [
    { field: 'currentPassword', message: 'currentPassword is incorrect: the password was changed meanwhile' },
  ]);
  // The password is the one the 200 set.
  const winner = answers[0].status === 200 ? 'Victim-new-1' : 'Attacker-new-1';
  const loser = winner === 'Victim-new-1' ? 'Attacker-new-1' : 'Victim-new-1';
  t.is(
    (await serial.request('POST', '/api/v1/auth/login', { body: { email: member.email, password: winner } }))
      .status,
    200,
  );
  t.is(
    (await serial.request('POST', '/api/v1/auth/login', { body: { email: member.email, password: loser } }))
      .status,
    401,
  );
});
