// No response and no log line ever carries a password or a password hash; a token appears only in the one
// response that issued it, and never in a log line. Runs every accounts flow, failures included, with
// logging at its most verbose level.
import test from 'ava';
import { startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { createMember, uniq } from '../helpers/factories';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ logLevel: 'trace' });
});
test.after.always(async () => {
  await app?.close();
});

test('passwords, bcrypt hashes and tokens never leak into responses or logs', async (t) => {
  const passwords = new Set<string>();
  const tokens = new Set<string>();
  const responses: Array<{ res: ApiResponse; issued: string[] }> = [];
  const call = async (method: string, path: string, options: Parameters<TestApp['request']>[2] = {}) => {
    const res = await app.request(method, path, options);
    const issued = [res.body?.accessToken, res.body?.refreshToken].filter(
      (v): v is string => typeof v === 'string',
    );
    for (const token of issued) tokens.add(token);
    responses.push({ res, issued });
    return res;
  };

  const email = `secret-${uniq()}@example.test`;
  const password = `Pw-${uniq()}-signup`;
  const newPassword = `Pw-${uniq()}-changed`;
  const wrongPassword = `Pw-${uniq()}-wrong`;
  [password, newPassword, wrongPassword].forEach((p) => passwords.add(p));

  t.is(
    (
      await call('POST', '/api/v1/auth/signup', {
        body: { email, password, name: 'S', phone: '0101234567', role: 'SELLER', businessNumber: '1-2-3' },
      })
    ).status,
    201,
  );
  t.is(
    (
      await call('POST', '/api/v1/auth/signup', {
        body: { email, password, name: 'S', phone: '0101234567', role: 'BUYER' },
      })
    ).status,
    409,
  );
  t.is(
    (
      await call('POST', '/api/v1/auth/signup', {
        body: { email: `x${email}`, password: 'short', name: 'S', phone: '0101234567', role: 'BUYER' },
      })
    ).status,
    400,
  );
  passwords.add('short');
  t.is((await call('POST', '/api/v1/auth/login', { body: { email, password: wrongPassword } })).status, 401);
  t.is(
    (
      await call('POST', '/api/v1/auth/login', {
        body: { email: `nobody-${email}`, password: wrongPassword },
      })
    ).status,
    401,
  );
  const session = (await call('POST', '/api/v1/auth/login', { body: { email, password } })).body;
  const rotated = (
    await call('POST', '/api/v1/auth/refresh', { body: { refreshToken: session.refreshToken } })
  ).body;
  // Reuse (logged as a warning), then a fresh session for the rest.
  t.is(
    (await call('POST', '/api/v1/auth/refresh', { body: { refreshToken: session.refreshToken } })).status,
    401,
  );
  const second = (await call('POST', '/api/v1/auth/login', { body: { email, password } })).body;
  t.is((await call('GET', '/api/v1/members/me', { token: second.accessToken })).status, 200);
  t.is((await call('GET', '/api/v1/members/me', { token: rotated.refreshToken })).status, 401);
  t.is(
    (await call('POST', '/api/v1/auth/refresh', { body: { refreshToken: second.accessToken } })).status,
    401,
  );
  t.is(
    (
      await call('PATCH', '/api/v1/members/me', {
        token: second.accessToken,
        body: { password: newPassword, currentPassword: wrongPassword },
      })
    ).status,
    400,
  );
  t.is(
    (
      await call('PATCH', '/api/v1/members/me', {
        token: second.accessToken,
        body: { password: newPassword, currentPassword: password },
      })
    ).status,
    200,
  );
  const third = (await call('POST', '/api/v1/auth/login', { body: { email, password: newPassword } })).body;
  t.is(
    (await call('POST', '/api/v1/auth/logout', { body: { refreshToken: third.refreshToken } })).status,
    204,
  );
  const admin = await createMember(app, 'ADMIN');
  passwords.add(admin.password);
  tokens.add(admin.token);
  t.is((await call('GET', '/api/v1/admin/members?size=100', { token: admin.token })).status, 200);
  // Throttled logins.
  for (let i = 0; i < 6; i++)
    await call('POST', '/api/v1/auth/login', { body: { email: admin.email, password: wrongPassword } });
  t.is(responses.at(-1)!.res.status, 429);

  const hashes = (await app.db('members').select('password_hash')).map(
    (r: { password_hash: string }) => r.password_hash,
  );
  const tokenHashes = (await app.db('refresh_tokens').select('token_hash')).map(
    (r: { token_hash: string }) => r.token_hash,
  );
  t.true(hashes.length >= 2);
  t.true(tokens.size >= 6); // access tokens signed within one second for one member are identical

  const logs = app.logs.text;
  t.true(logs.includes('POST /api/v1/auth/login 200'), 'the access log was captured');
  t.true(logs.includes('refresh token'), 'the reuse warning was captured');
  const bcryptLike = /\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}/;
  t.false(bcryptLike.test(logs), 'a bcrypt hash in the logs');
  for (const secret of [...passwords, ...hashes, ...tokenHashes])
    t.false(logs.includes(secret), `a secret in the logs: ${secret.slice(0, 6)}…`);
  for (const token of tokens) {
    t.false(logs.includes(token), 'a token in the logs');
    // A token's signature alone is as good as a leak of the token.
    t.false(logs.includes(token.split('.')[2]), 'a token signature in the logs');
  }

  for (const { res, issued } of responses) {
    t.false(bcryptLike.test(res.text), `a bcrypt hash in a response: ${res.text.slice(0, 80)}`);
    t.false(/password_?hash/i.test(res.text), 'a hash field in a response');
    for (const secret of [...passwords, ...hashes, ...tokenHashes])
      t.false(res.text.includes(secret), `a secret in a response: ${res.text.slice(0, 80)}`);
    for (const token of tokens) {
      if (!issued.includes(token))
        t.false(res.text.includes(token), `a token echoed in another response: ${res.text.slice(0, 80)}`);
    }
  }
});
