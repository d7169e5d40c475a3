// Edges of signup, login, refresh and the Bearer header that the main auth tests leave open: the tokens live as
// long as the pair says (access 1 h, refresh 7 d, and so does the stored refresh row), the password's byte
// bounds are inclusive, a login password is compared as sent (never trimmed), a revoked refresh token is
// refused as revoked (not as a reuse), and the Authorization scheme is case-insensitive (RFC 9110).
import test from 'ava';
import jwt from 'jsonwebtoken';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, login, uniq } from '../helpers/factories';
import { hashToken } from '../../lib/auth/tokens';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const SIGNUP = '/api/v1/auth/signup';
const REFRESH = '/api/v1/auth/refresh';

test('a password of exactly 8 bytes (the minimum) signs up and logs in', async (t) => {
  for (const password of ['Pass-8by', '가나ab']) {
    t.is(Buffer.byteLength(password, 'utf8'), 8);
    const email = `eight-${uniq()}@example.test`;
    const res = await app.request('POST', SIGNUP, {
      body: { email, password, name: 'Eight', phone: '010-9999-0000', role: 'BUYER' },
    });
    t.is(res.status, 201, res.text);
    t.is(res.body.email, email);
    const tokens = await app.request('POST', '/api/v1/auth/login', { body: { email, password } });
    t.is(tokens.status, 200, tokens.text);
    t.is(tokens.body.tokenType, 'Bearer');
  }
  // One byte fewer is refused.
  const short = await app.request('POST', SIGNUP, {
    body: {
      email: `seven-${uniq()}@example.test`,
      password: 'Pass-7b',
      name: 'S',
      phone: '010-9999-0000',
      role: 'BUYER',
    },
  });
  assertError(t, short, 400, 'VALIDATION_ERROR', SIGNUP);
  t.deepEqual(short.body.errors, [{ field: 'password', message: 'password must be at least 8 bytes' }]);
});

test('a refresh token of a logged-out session is refused as revoked, not as a reuse', async (t) => {
  const member = await createMember(app);
  const { refreshToken } = await login(app, member);
  const out = await app.request('POST', '/api/v1/auth/logout', { body: { refreshToken } });
  t.is(out.status, 204);
  const res = await app.request('POST', REFRESH, { body: { refreshToken } });
  assertError(t, res, 401, 'INVALID_TOKEN', REFRESH);
  t.is(res.body.message, 'Refresh token has been revoked');
});

test('login compares the password as sent: never trimmed, so surrounding spaces are part of it', async (t) => {
  const plain = await createMember(app);
  for (const password of [` ${plain.password}`, `${plain.password} `]) {
    const res = await app.request('POST', '/api/v1/auth/login', { body: { email: plain.email, password } });
    assertError(t, res, 401, 'INVALID_CREDENTIALS', '/api/v1/auth/login');
  }
  const padded = await createMember(app, 'BUYER', { password: '  Padded-pass-1  ' });
  const ok = await app.request('POST', '/api/v1/auth/login', {
    body: { email: padded.email, password: padded.password },
  });
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.tokenType, 'Bearer');
});

test('the tokens live as long as the pair says: access 1 h, refresh 7 d, and the stored refresh row with its token', async (t) => {
  const member = await createMember(app);
  const check = async (res: { status: number; text: string; body: Record<string, any> }) => {
    t.is(res.status, 200, res.text);
    t.is(res.body.expiresIn, 3600);
    t.is(res.body.refreshExpiresIn, 604800);
    const access = jwt.decode(res.body.accessToken) as { iat: number; exp: number };
    t.is(access.exp - access.iat, 3600);
    const refresh = jwt.decode(res.body.refreshToken) as { iat: number; exp: number };
    t.is(refresh.exp - refresh.iat, 604800);
    t.true(Math.abs(refresh.exp * 1000 - Date.now() - 604800_000) < 60_000);
    // The row the refresh is checked against expires with the token (exp is in whole seconds).
    const row = await app.db('refresh_tokens').where('token_hash', hashToken(res.body.refreshToken)).first();
    t.truthy(row);
    t.true(Math.abs(new Date(row.expires_at).getTime() - refresh.exp * 1000) < 2000, String(row.expires_at));
    return res.body.refreshToken as string;
  };
  const first = await check(
    await app.request('POST', '/api/v1/auth/login', {
      body: { email: member.email, password: member.password },
    }),
  );
  await check(await app.request('POST', REFRESH, { body: { refreshToken: first } }));
});

test('the Authorization scheme is case-insensitive: bearer and BEARER are Bearer', async (t) => {
  const member = await createMember(app);
  for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
    const res = await app.request('GET', '/api/v1/members/me', {
      headers: { Authorization: `${scheme} ${member.token}` },
    });
    t.is(res.status, 200, `${scheme}: ${res.text}`);
    t.is(res.body.id, member.id);
  }
  const other = await app.request('GET', '/api/v1/members/me', {
    headers: { Authorization: `Basic ${member.token}` },
  });
  assertError(t, other, 401, 'INVALID_TOKEN', '/api/v1/members/me');
});
