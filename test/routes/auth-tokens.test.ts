// Token attacks: every forged, expired, confused or malformed token is a 401 with the right code.
import crypto from 'node:crypto';
import test from 'ava';
import jwt from 'jsonwebtoken';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, login, type TestMember } from '../helpers/factories';

let app: TestApp;
let buyer: TestMember;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  buyer = await createMember(app, 'BUYER');
  admin = await createMember(app, 'ADMIN');
});
test.after.always(async () => {
  await app?.close();
});

const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Signs an access token the way the service does, with any part overridable. */
function accessToken(
  options: {
    secret?: string;
    algorithm?: jwt.Algorithm;
    issuer?: string;
    audience?: string;
    /** null: no `exp` claim at all. */
    expiresIn?: number | null;
    noTimestamp?: boolean;
    payload?: object;
    sub?: string;
  } = {},
): string {
  const { jwt: cfg } = app.config;
  return jwt.sign(
    { typ: 'access', role: 'BUYER', ver: 0, ...options.payload },
    options.secret ?? cfg.secret,
    {
      algorithm: options.algorithm ?? cfg.algorithm,
      issuer: options.issuer ?? cfg.issuer,
      audience: options.audience ?? cfg.audience,
      ...(options.expiresIn === null ? {} : { expiresIn: options.expiresIn ?? 3600 }),
      noTimestamp: options.noTimestamp ?? false,
      subject: options.sub ?? String(buyer.id),
    },
  );
}

const me = (token: string) => app.request('GET', '/api/v1/members/me', { token });
const refresh = (refreshToken: string) =>
  app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken } });

test('a correctly signed access token is accepted (control for the attacks below)', async (t) => {
  const res = await me(accessToken());
  t.is(res.status, 200);
  t.is(res.body.id, buyer.id);
});

test('expired access token: 401 TOKEN_EXPIRED', async (t) => {
  assertError(t, await me(accessToken({ expiresIn: -10 })), 401, 'TOKEN_EXPIRED', '/api/v1/members/me');
});

test('a correctly signed access token without exp (never expiring) or without iat: 401 INVALID_TOKEN', async (t) => {
  const noExp = accessToken({ expiresIn: null });
  t.is(JSON.parse(Buffer.from(noExp.split('.')[1], 'base64url').toString()).exp, undefined);
  assertError(t, await me(noExp), 401, 'INVALID_TOKEN', '/api/v1/members/me');
  const noIat = accessToken({ noTimestamp: true });
  t.is(JSON.parse(Buffer.from(noIat.split('.')[1], 'base64url').toString()).iat, undefined);
  assertError(t, await me(noIat), 401, 'INVALID_TOKEN', '/api/v1/members/me');
  const both = accessToken({ expiresIn: null, noTimestamp: true });
  assertError(t, await me(both), 401, 'INVALID_TOKEN', '/api/v1/members/me');
});

test('an access token without its token version (ver), or with a malformed one: 401 INVALID_TOKEN', async (t) => {
  for (const ver of [undefined, '0', -1, 1.5]) {
    assertError(t, await me(accessToken({ payload: { ver } })), 401, 'INVALID_TOKEN', '/api/v1/members/me');
  }
});

test('tampered signature: 401 INVALID_TOKEN', async (t) => {
  const token = accessToken();
  const [header, payload, signature] = token.split('.');
  const flipped = signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11);
  assertError(t, await me(`${header}.${payload}.${flipped}`), 401, 'INVALID_TOKEN', '/api/v1/members/me');
});

test('tampered payload (a buyer promoting itself to ADMIN, signature kept): 401 INVALID_TOKEN', async (t) => {
  const [header, payload, signature] = buyer.token.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const forged = `${header}.${b64url({ ...claims, role: 'ADMIN' })}.${signature}`;
  assertError(
    t,
    await app.request('GET', '/api/v1/admin/members', { token: forged }),
    401,
    'INVALID_TOKEN',
    '/api/v1/admin/members',
  );
});

test('alg "none" (unsigned) token: 401 INVALID_TOKEN', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    typ: 'access',
    role: 'ADMIN',
    sub: String(admin.id),
    iss: app.config.jwt.issuer,
    aud: app.config.jwt.audience,
    iat: now,
    exp: now + 3600,
  };
  for (const token of [
    `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`,
    `${b64url({ alg: 'none' })}.${b64url(claims)}`,
  ]) {
    assertError(
      t,
      await app.request('GET', '/api/v1/admin/members', { token }),
      401,
      'INVALID_TOKEN',
      '/api/v1/admin/members',
    );
  }
});

test('another HMAC algorithm than the pinned one, same secret: 401 INVALID_TOKEN', async (t) => {
  assertError(t, await me(accessToken({ algorithm: 'HS512' })), 401, 'INVALID_TOKEN', '/api/v1/members/me');
});

test('wrong secret: 401 INVALID_TOKEN (also when expired)', async (t) => {
  const secret = crypto.randomBytes(32).toString('hex');
  assertError(t, await me(accessToken({ secret })), 401, 'INVALID_TOKEN', '/api/v1/members/me');
  assertError(
    t,
    await me(accessToken({ secret, expiresIn: -10 })),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
});

test('wrong issuer or audience: 401 INVALID_TOKEN', async (t) => {
  assertError(
    t,
    await me(accessToken({ issuer: 'someone-else' })),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
  assertError(
    t,
    await me(accessToken({ audience: 'another-api' })),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
});

test('claims that do not make sense: unknown role, non-numeric subject, missing type: 401 INVALID_TOKEN', async (t) => {
  assertError(
    t,
    await me(accessToken({ payload: { role: 'ROOT' } })),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
  assertError(t, await me(accessToken({ sub: 'admin' })), 401, 'INVALID_TOKEN', '/api/v1/members/me');
  assertError(
    t,
    await me(accessToken({ payload: { typ: undefined } })),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
});

test('malformed tokens and Authorization headers: 401 INVALID_TOKEN', async (t) => {
  for (const token of ['not-a-token', 'a.b', 'a.b.c', '...', 'eyJhbGciOiJIUzI1NiJ9.e30']) {
    assertError(t, await me(token), 401, 'INVALID_TOKEN', '/api/v1/members/me');
  }
  for (const authorization of [
    `Basic ${Buffer.from('a:b').toString('base64')}`,
    'Bearer',
    'Bearer ',
    `Token ${buyer.token}`,
    `Bearer ${buyer.token} extra`,
  ]) {
    const res = await app.request('GET', '/api/v1/members/me', { headers: { Authorization: authorization } });
    assertError(t, res, 401, 'INVALID_TOKEN', '/api/v1/members/me');
  }
  // No header at all is a different case: UNAUTHENTICATED.
  assertError(
    t,
    await app.request('GET', '/api/v1/members/me'),
    401,
    'UNAUTHENTICATED',
    '/api/v1/members/me',
  );
});

test('a token accepted (and cached as verified) is refused once its exp passes: 401 TOKEN_EXPIRED', async (t) => {
  const shortLived = accessToken({ expiresIn: 4 }); // 3-4 s: exp is in whole seconds
  const { exp } = jwt.decode(shortLived) as { exp: number };
  const first = await me(shortLived);
  t.is(first.status, 200);
  t.is(first.body.id, buyer.id);
  t.is((await me(shortLived)).status, 200);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, exp * 1000 - Date.now()) + 50));
  assertError(t, await me(shortLived), 401, 'TOKEN_EXPIRED', '/api/v1/members/me');
});

test('the auth endpoints ignore a stale Authorization header: an expired access token cannot block its own refresh', async (t) => {
  const expired = accessToken({ expiresIn: -10 });
  const session = await login(app, buyer);
  const refreshed = await app.request('POST', '/api/v1/auth/refresh', {
    token: expired,
    body: { refreshToken: session.refreshToken },
  });
  t.is(refreshed.status, 200);
  t.is(refreshed.body.tokenType, 'Bearer');
  const loggedIn = await app.request('POST', '/api/v1/auth/login', {
    headers: { Authorization: 'Bearer garbage' },
    body: { email: buyer.email, password: buyer.password },
  });
  t.is(loggedIn.status, 200);
  const loggedOut = await app.request('POST', '/api/v1/auth/logout', {
    token: expired,
    body: { refreshToken: refreshed.body.refreshToken },
  });
  t.is(loggedOut.status, 204);
  // The header is ignored, not honoured: it grants nothing on the endpoints that do need a caller.
  assertError(t, await me(expired), 401, 'TOKEN_EXPIRED', '/api/v1/members/me');
});

test('a refresh token used as a Bearer token: 401 INVALID_TOKEN', async (t) => {
  const { refreshToken } = await login(app, buyer);
  assertError(t, await me(refreshToken), 401, 'INVALID_TOKEN', '/api/v1/members/me');
});

test('an access token used as a refresh token: 401 INVALID_TOKEN', async (t) => {
  const { accessToken: access } = await login(app, buyer);
  assertError(t, await refresh(access), 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
});

test('refresh token attacks: expired, tampered, wrong secret, alg none, wrong audience', async (t) => {
  const { jwt: cfg } = app.config;
  const { refreshToken } = await login(app, buyer);
  const claims = JSON.parse(Buffer.from(refreshToken.split('.')[1], 'base64url').toString());
  const { iat: _iat, exp: _exp, ...rest } = claims;
  const resign = (overrides: object, secret = cfg.secret, options: jwt.SignOptions = {}) =>
    jwt.sign({ ...rest, ...overrides }, secret, { algorithm: cfg.algorithm, expiresIn: 3600, ...options });

  assertError(
    t,
    await refresh(resign({}, cfg.secret, { expiresIn: -10 })),
    401,
    'TOKEN_EXPIRED',
    '/api/v1/auth/refresh',
  );
  // Another member's id in a token of this family: signature fine, but it matches no stored hash.
  assertError(
    t,
    await refresh(resign({ sub: String(admin.id) })),
    401,
    'INVALID_TOKEN',
    '/api/v1/auth/refresh',
  );
  assertError(t, await refresh(resign({}, 'x'.repeat(40))), 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  assertError(t, await refresh(resign({ aud: 'another-api' })), 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  const [header, payload, signature] = refreshToken.split('.');
  const flipped = signature.slice(0, 5) + (signature[5] === 'A' ? 'B' : 'A') + signature.slice(6);
  assertError(
    t,
    await refresh(`${header}.${payload}.${flipped}`),
    401,
    'INVALID_TOKEN',
    '/api/v1/auth/refresh',
  );
  assertError(
    t,
    await refresh(`${b64url({ alg: 'none' })}.${payload}.`),
    401,
    'INVALID_TOKEN',
    '/api/v1/auth/refresh',
  );
  assertError(t, await refresh('garbage'), 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  // None of these attempts consumed the genuine token.
  t.is((await refresh(refreshToken)).status, 200);
});

test('a stored refresh token past its expiry is refused with TOKEN_EXPIRED', async (t) => {
  const member = await createMember(app);
  const { refreshToken } = await login(app, member);
  // The JWT says 7 days; the stored row is what the server trusts, so expire the row.
  await app
    .db('refresh_tokens')
    .where({ member_id: member.id })
    .update({ expires_at: new Date(Date.now() - 1000) });
  assertError(t, await refresh(refreshToken), 401, 'TOKEN_EXPIRED', '/api/v1/auth/refresh');
});
