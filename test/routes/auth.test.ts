import test from 'ava';
import crypto from 'node:crypto';
import bcrypt from 'bcrypt';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError, ISO_MS } from '../helpers/assertions';
import { createMember, uniq, login } from '../helpers/factories';
import { hashToken } from '../../lib/auth/tokens';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const buyerBody = (overrides: Record<string, unknown> = {}) => ({
  email: `new-${uniq()}@example.test`,
  password: 'Secret-pass-1',
  name: 'New Buyer',
  phone: '010-9999-0000',
  role: 'BUYER',
  ...overrides,
});

test('signup as a buyer: 201 with the member JSON, email trimmed and lower-cased', async (t) => {
  const email = `Mixed.${uniq()}@Example.TEST`;
  const res = await app.request('POST', '/api/v1/auth/signup', { body: buyerBody({ email: `  ${email} ` }) });
  t.is(res.status, 201);
  t.deepEqual(Object.keys(res.body).sort(), [
    'businessNumber',
    'createdAt',
    'email',
    'id',
    'name',
    'phone',
    'role',
    'updatedAt',
  ]);
  t.is(res.body.email, email.toLowerCase());
  t.is(res.body.role, 'BUYER');
  t.is(res.body.name, 'New Buyer');
  t.is(res.body.phone, '010-9999-0000');
  t.is(res.body.businessNumber, null);
  t.true(Number.isInteger(res.body.id));
  t.regex(res.body.createdAt, ISO_MS);
  t.regex(res.body.updatedAt, ISO_MS);
  const row = await app.db('members').where({ id: res.body.id }).first();
  t.is(row.email, email.toLowerCase());
  t.regex(row.password_hash, /^\$2[aby]\$04\$/);
});

test('signup as a seller with a business number: 201', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/signup', {
    body: buyerBody({ role: 'SELLER', businessNumber: ' 123-45-67890 ' }),
  });
  t.is(res.status, 201);
  t.is(res.body.role, 'SELLER');
  t.is(res.body.businessNumber, '123-45-67890');
});

test('seller signup without (or with a blank) business number: 400 BUSINESS_NUMBER_REQUIRED', async (t) => {
  for (const extra of [{}, { businessNumber: '   ' }, { businessNumber: null }]) {
    const res = await app.request('POST', '/api/v1/auth/signup', {
      body: buyerBody({ role: 'SELLER', ...extra }),
    });
    assertError(t, res, 400, 'BUSINESS_NUMBER_REQUIRED', '/api/v1/auth/signup');
    t.deepEqual(res.body.errors, [
      { field: 'businessNumber', message: 'businessNumber is required for sellers' },
    ]);
  }
});

test('a buyer cannot carry a business number: 400', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/signup', {
    body: buyerBody({ businessNumber: '123' }),
  });
  assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
  t.deepEqual(res.body.errors, [{ field: 'businessNumber', message: 'businessNumber is only for sellers' }]);
});

test('ADMIN cannot sign up: 400 VALIDATION_ERROR on role', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/signup', { body: buyerBody({ role: 'ADMIN' }) });
  assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
  t.deepEqual(res.body.errors, [{ field: 'role', message: 'role must be BUYER or SELLER' }]);
  t.is(
    await app
      .db('members')
      .where({ role: 'ADMIN' })
      .count({ n: '*' })
      .first()
      .then((r: any) => Number(r.n)),
    0,
  );
});

test('signup body validation: each bad field named', async (t) => {
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ email: 'not-an-email' }, 'email', 'email must be a valid e-mail address'],
    [{ email: undefined }, 'email', 'email is required'],
    [{ email: 42 }, 'email', 'email must be a string'],
    [{ name: ['x'] }, 'name', 'name must be a string'],
    [{ password: 'short7!' }, 'password', 'password must be at least 8 bytes'],
    [{ password: 'x'.repeat(73) }, 'password', 'password must be at most 72 bytes'],
    // 25 three-byte characters are 75 bytes although only 25 characters.
    [{ password: '가'.repeat(25) }, 'password', 'password must be at most 72 bytes'],
    [{ password: 12345678 }, 'password', 'password must be a string'],
    [{ name: '   ' }, 'name', 'name must not be blank'],
    [{ phone: 'call me' }, 'phone', 'phone must be 7-30 characters of digits, spaces, +, -, ( or )'],
    [{ role: 'buyer' }, 'role', 'role must be BUYER or SELLER'],
    [{ id: 7 }, 'id', 'unknown field'],
  ];
  for (const [overrides, field, message] of cases) {
    const res = await app.request('POST', '/api/v1/auth/signup', { body: buyerBody(overrides) });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/auth/signup');
    t.deepEqual(res.body.errors, [{ field, message }], JSON.stringify(overrides));
  }
  // Exactly 72 bytes is allowed.
  const ok = await app.request('POST', '/api/v1/auth/signup', {
    body: buyerBody({ password: '가'.repeat(24) }),
  });
  t.is(ok.status, 201);
});

test('duplicate email, in any case: 409 EMAIL_ALREADY_EXISTS', async (t) => {
  const body = buyerBody();
  t.is((await app.request('POST', '/api/v1/auth/signup', { body })).status, 201);
  const res = await app.request('POST', '/api/v1/auth/signup', {
    body: { ...body, email: body.email.toUpperCase() },
  });
  assertError(t, res, 409, 'EMAIL_ALREADY_EXISTS', '/api/v1/auth/signup');
});

test('10 parallel signups with one email: exactly one 201, nine 409', async (t) => {
  const body = buyerBody();
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      app.request('POST', '/api/v1/auth/signup', { body: { ...body, name: `Racer ${i}` } }),
    ),
  );
  const statuses = results.map((r) => r.status).sort();
  t.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
  for (const res of results.filter((r) => r.status === 409)) t.is(res.body.code, 'EMAIL_ALREADY_EXISTS');
  const rows = await app.db('members').where({ email: body.email });
  t.is(rows.length, 1);
});

test('login: 200 with the token pair; the email is case-insensitive', async (t) => {
  const member = await createMember(app, 'SELLER');
  const res = await app.request('POST', '/api/v1/auth/login', {
    body: { email: ` ${member.email.toUpperCase()} `, password: member.password },
  });
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), [
    'accessToken',
    'expiresIn',
    'refreshExpiresIn',
    'refreshToken',
    'tokenType',
  ]);
  t.is(res.body.tokenType, 'Bearer');
  t.is(res.body.expiresIn, 3600);
  t.is(res.body.refreshExpiresIn, 604800);
  const me = await app.request('GET', '/api/v1/members/me', { token: res.body.accessToken });
  t.is(me.status, 200);
  t.is(me.body.id, member.id);
  t.is(me.body.role, 'SELLER');
  // The stored refresh token is its sha256 hash, never the token itself.
  const rows = await app.db('refresh_tokens').where({ member_id: member.id });
  t.is(rows.length, 1);
  t.regex(rows[0].token_hash, /^[0-9a-f]{64}$/);
  t.not(rows[0].token_hash, res.body.refreshToken);
});

test('login with a wrong password or an unknown email: the same 401 INVALID_CREDENTIALS', async (t) => {
  const member = await createMember(app);
  const wrong = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: 'Wrong-pass-1' },
  });
  const unknown = await app.request('POST', '/api/v1/auth/login', {
    body: { email: `nobody-${uniq()}@example.test`, password: member.password },
  });
  for (const res of [wrong, unknown]) assertError(t, res, 401, 'INVALID_CREDENTIALS', '/api/v1/auth/login');
  t.is(wrong.body.message, unknown.body.message);
});

test('login with the right 72-byte prefix but a longer password: 401', async (t) => {
  const password = 'p'.repeat(72);
  const member = await createMember(app, 'BUYER', { password });
  t.is(
    (await app.request('POST', '/api/v1/auth/login', { body: { email: member.email, password } })).status,
    200,
  );
  const res = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: `${password}EXTRA` },
  });
  assertError(t, res, 401, 'INVALID_CREDENTIALS', '/api/v1/auth/login');
});

test('login body validation: 400 naming the missing fields', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/login', { body: {} });
  assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/auth/login');
  t.deepEqual(
    [...res.body.errors].sort((a: any, b: any) => a.field.localeCompare(b.field)),
    [
      { field: 'email', message: 'email is required' },
      { field: 'password', message: 'password is required' },
    ],
  );
});

test('login throttling: after 5 failures the 6th attempt, even with the right password, is 429 with Retry-After', async (t) => {
  const member = await createMember(app);
  for (let i = 0; i < 5; i++) {
    const res = await app.request('POST', '/api/v1/auth/login', {
      body: { email: member.email, password: `Wrong-${i}-pass` },
    });
    assertError(t, res, 401, 'INVALID_CREDENTIALS', '/api/v1/auth/login');
  }
  const blocked = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email.toUpperCase(), password: member.password },
  });
  assertError(t, blocked, 429, 'TOO_MANY_REQUESTS', '/api/v1/auth/login');
  const retryAfter = Number(blocked.headers.get('retry-after'));
  t.true(retryAfter > 890 && retryAfter <= 900, String(retryAfter));
  // Per (email, client address): another address, and another email from this address, are unaffected.
  const other = await app.bundle.services.auth.login(
    { email: member.email, password: member.password },
    '203.0.113.9',
  );
  t.is(other.tokenType, 'Bearer');
  const someoneElse = await createMember(app);
  const ok = await app.request('POST', '/api/v1/auth/login', {
    body: { email: someoneElse.email, password: someoneElse.password },
  });
  t.is(ok.status, 200);
});

test('login throttling: parallel wrong guesses cannot exceed the limit', async (t) => {
  const member = await createMember(app);
  const results = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      app.request('POST', '/api/v1/auth/login', {
        body: { email: member.email, password: `Guess-${i}-pass` },
      }),
    ),
  );
  t.deepEqual(
    results.map((r) => r.status).sort(),
    [401, 401, 401, 401, 401, 429, 429, 429, 429, 429, 429, 429],
  );
});

test('a successful login clears the failure counter', async (t) => {
  const member = await createMember(app);
  const attempt = async (password: string) =>
    (await app.request('POST', '/api/v1/auth/login', { body: { email: member.email, password } })).status;
  for (let i = 0; i < 4; i++) t.is(await attempt('Wrong-pass-1'), 401);
  t.is(await attempt(member.password), 200);
  for (let i = 0; i < 5; i++) t.is(await attempt('Wrong-pass-1'), 401);
  t.is(await attempt(member.password), 429);
});

test('refresh: 200 with a new pair; the used refresh token stops working', async (t) => {
  const member = await createMember(app, 'SELLER');
  const first = await login(app, member);
  const res = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: first.refreshToken },
  });
  t.is(res.status, 200);
  t.is(res.body.tokenType, 'Bearer');
  t.is(res.body.expiresIn, 3600);
  t.is(res.body.refreshExpiresIn, 604800);
  t.not(res.body.refreshToken, first.refreshToken);
  const me = await app.request('GET', '/api/v1/members/me', { token: res.body.accessToken });
  t.is(me.status, 200);
  t.is(me.body.id, member.id);
  // The next refresh in the chain works.
  const again = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: res.body.refreshToken },
  });
  t.is(again.status, 200);
});

test('refresh reuse: presenting a rotated token is 401 and revokes the whole family, newest token included', async (t) => {
  const member = await createMember(app);
  const first = await login(app, member);
  const second = (
    await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: first.refreshToken } })
  ).body;
  const reuse = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: first.refreshToken },
  });
  assertError(t, reuse, 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  const newest = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: second.refreshToken },
  });
  assertError(t, newest, 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  const rows = await app.db('refresh_tokens').where({ member_id: member.id });
  t.is(rows.length, 2);
  t.true(rows.every((row: any) => row.revoked_at !== null));
  // Another login (another family) is unaffected.
  const other = await login(app, member);
  t.is(
    (await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: other.refreshToken } }))
      .status,
    200,
  );
});

test('refresh races: the same token presented 5 times at once yields exactly one successor', async (t) => {
  const member = await createMember(app);
  const first = await login(app, member);
  const results = await Promise.all(
    Array.from({ length: 5 }, () =>
      app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: first.refreshToken } }),
    ),
  );
  const winners = results.filter((r) => r.status === 200);
  // The conditional UPDATE lets exactly one of them through.
  t.is(winners.length, 1);
  for (const res of results.filter((r) => r.status !== 200)) t.is(res.body.code, 'INVALID_TOKEN');
  // Whoever lost revoked the family, so even the winner's successor is dead.
  for (const w of winners) {
    t.is(
      (await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: w.body.refreshToken } }))
        .status,
      401,
    );
  }
  const live = await app.db('refresh_tokens').where({ member_id: member.id }).whereNull('revoked_at');
  t.is(live.length, 0);
});

test('refresh with a missing or unknown token: 400 / 401', async (t) => {
  const missing = await app.request('POST', '/api/v1/auth/refresh', { body: {} });
  assertError(t, missing, 400, 'VALIDATION_ERROR', '/api/v1/auth/refresh');
  t.deepEqual(missing.body.errors, [{ field: 'refreshToken', message: 'refreshToken is required' }]);
  // Validly signed, but never issued (no stored hash).
  const member = await createMember(app);
  const forged = app.bundle.services.tokens.signRefreshToken(
    member.id,
    'ffffffff-ffff-4fff-8fff-ffffffffffff',
    0,
  ).token;
  assertError(
    t,
    await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: forged } }),
    401,
    'INVALID_TOKEN',
    '/api/v1/auth/refresh',
  );
});

test('a session granted before a password change ends at its next refresh, even when the revocation ran before its token existed', async (t) => {
  const member = await createMember(app);
  const session = await login(app, member);
  // What a login racing a password change leaves: the change (version bumped, every stored token revoked)
  // committed while the login checked the old password, so the login's token row came after the revocation.
  // Here: the version moves on and this session's row is left live.
  await app.db('members').where({ id: member.id }).increment('token_version', 1);
  const refused = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: session.refreshToken },
  });
  assertError(t, refused, 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  t.is(refused.body.message, 'The session ended: the password was changed');
  // The whole family is revoked: the token the rotation issued is dead too.
  const live = await app.db('refresh_tokens').where({ member_id: member.id }).whereNull('revoked_at');
  t.is(live.length, 0);
  // A login after the change gets a session that refreshes.
  const fresh = await login(app, member);
  const refreshed = await app.request('POST', '/api/v1/auth/refresh', {
    body: { refreshToken: fresh.refreshToken },
  });
  t.is(refreshed.status, 200, refreshed.text);
  t.is((await app.request('GET', '/api/v1/members/me', { token: refreshed.body.accessToken })).status, 200);
});

test('a refresh token signed before sessions carried their version still refreshes', async (t) => {
  const member = await createMember(app);
  const familyId = crypto.randomUUID();
  const { token, claims } = app.bundle.services.tokens.signRefreshToken(member.id, familyId, null);
  await app.db('refresh_tokens').insert({
    member_id: member.id,
    family_id: familyId,
    token_hash: hashToken(token),
    expires_at: claims.expiresAt,
    created_at: new Date(),
  });
  const refreshed = await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: token } });
  t.is(refreshed.status, 200, refreshed.text);
});

test('logout: 204, revokes the family; the refresh token and its successors stop working', async (t) => {
  const member = await createMember(app);
  const first = await login(app, member);
  const second = (
    await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: first.refreshToken } })
  ).body;
  const otherSession = await login(app, member);
  const res = await app.request('POST', '/api/v1/auth/logout', {
    body: { refreshToken: second.refreshToken },
  });
  t.is(res.status, 204);
  t.is(res.text, '');
  assertError(
    t,
    await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: second.refreshToken } }),
    401,
    'INVALID_TOKEN',
    '/api/v1/auth/refresh',
  );
  // Logging out twice is harmless.
  t.is(
    (await app.request('POST', '/api/v1/auth/logout', { body: { refreshToken: second.refreshToken } }))
      .status,
    204,
  );
  // Only that session ends: another login's family still refreshes.
  t.is(
    (await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: otherSession.refreshToken } }))
      .status,
    200,
  );
});

test('logout with an access token or garbage instead of a refresh token: 401 INVALID_TOKEN', async (t) => {
  const member = await createMember(app);
  for (const refreshToken of [member.token, 'garbage']) {
    assertError(
      t,
      await app.request('POST', '/api/v1/auth/logout', { body: { refreshToken } }),
      401,
      'INVALID_TOKEN',
      '/api/v1/auth/logout',
    );
  }
  assertError(
    t,
    await app.request('POST', '/api/v1/auth/logout', { body: {} }),
    400,
    'VALIDATION_ERROR',
    '/api/v1/auth/logout',
  );
});

test("login deletes the member's expired refresh tokens and keeps the live ones", async (t) => {
  const member = await createMember(app);
  const old = await login(app, member);
  const live = await login(app, member);
  const oldRow = await app.db('refresh_tokens').where({ member_id: member.id }).orderBy('id').first();
  await app
    .db('refresh_tokens')
    .where({ id: oldRow.id })
    .update({ expires_at: new Date(Date.now() - 1000) });
  await login(app, member);
  const rows = await app.db('refresh_tokens').where({ member_id: member.id });
  t.is(rows.length, 2);
  t.false(rows.some((row: any) => row.id === oldRow.id));
  assertError(
    t,
    await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: old.refreshToken } }),
    401,
    'INVALID_TOKEN',
    '/api/v1/auth/refresh',
  );
  t.is(
    (await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: live.refreshToken } })).status,
    200,
  );
});

test('a password hash made at another cost (BCRYPT_COST changed since) is made again at the next login; the login is 200 either way', async (t) => {
  const member = await createMember(app);
  // As if the member signed up while the cost was 5 (the tests run at 4).
  const old = await bcrypt.hash(member.password, 5);
  await app.db('members').where('id', member.id).update({ password_hash: old });
  const first = await app.request('POST', '/api/v1/auth/login', {
    body: { email: member.email, password: member.password },
  });
  t.is(first.status, 200, first.text);
  const { password_hash: remade, token_version: version } = await app
    .db('members')
    .where('id', member.id)
    .first('password_hash', 'token_version');
  t.not(remade, old);
  t.is(bcrypt.getRounds(remade), 4);
  t.true(await bcrypt.compare(member.password, remade));
  t.is(Number(version), 0, 'no password change: the member keeps its tokens');
  t.is((await app.request('GET', '/api/v1/members/me', { token: first.body.accessToken })).status, 200);
  // At the configured cost already: left as it is.
  t.is(
    (
      await app.request('POST', '/api/v1/auth/login', {
        body: { email: member.email, password: member.password },
      })
    ).status,
    200,
  );
  t.is((await app.db('members').where('id', member.id).first('password_hash')).password_hash, remade);
});
