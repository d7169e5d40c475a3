// E-mails are stored normalised (trimmed, lower-cased, NFC) and compared byte for byte on both databases. On
// MySQL the column's accent-insensitive collation let `vìctim@…` log into `victim@…` with a throttle bucket of
// its own, i.e. unlimited guessing; now such a variant is an unknown e-mail and shares nothing with the account.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, uniq } from '../helpers/factories';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const login = (email: string, password: string) =>
  app.request('POST', '/api/v1/auth/login', { body: { email, password } });

test('an accented variant of an e-mail is an unknown e-mail (401), also after the real one is throttled', async (t) => {
  const id = uniq();
  const password = 'Password-123';
  const signup = await app.request('POST', '/api/v1/auth/signup', {
    body: { email: `  Victim-${id}@Example.TEST `, password, name: 'V', phone: '0101234567', role: 'BUYER' },
  });
  t.is(signup.status, 201, signup.text);
  t.is(signup.body.email, `victim-${id}@example.test`);
  t.is(
    (await app.db('members').where('id', signup.body.id).first('email')).email,
    `victim-${id}@example.test`,
  );

  const variant = `vìctim-${id}@example.test`;
  assertError(t, await login(variant, password), 401, 'INVALID_CREDENTIALS', '/api/v1/auth/login');
  assertError(t, await login(`VÌCTIM-${id}@EXAMPLE.TEST`, password), 401, 'INVALID_CREDENTIALS');
  const real = await login(`VICTIM-${id}@example.test`, password);
  t.is(real.status, 200, 'case still does not matter');
  t.is(typeof real.body.accessToken, 'string');

  // Five wrong guesses lock the real address; the variant does not open a way around that lock.
  for (let i = 0; i < 5; i++) {
    assertError(
      t,
      await login(`victim-${id}@example.test`, `wrong-${i}-password`),
      401,
      'INVALID_CREDENTIALS',
    );
  }
  const locked = await login(`victim-${id}@example.test`, password);
  assertError(t, locked, 429, 'TOO_MANY_REQUESTS');
  t.truthy(locked.headers.get('retry-after'));
  assertError(t, await login(variant, password), 401, 'INVALID_CREDENTIALS');

  const duplicate = await app.request('POST', '/api/v1/auth/signup', {
    body: { email: `VICTIM-${id}@EXAMPLE.test`, password, name: 'V', phone: '0101234567', role: 'BUYER' },
  });
  assertError(t, duplicate, 409, 'EMAIL_ALREADY_EXISTS', '/api/v1/auth/signup');
});

test('e-mails are compared in NFC: a decomposed spelling finds the composed address and nothing else', async (t) => {
  const id = uniq();
  const composed = `jos\u00e9-${id}@example.test`; // é as one code point
  const member = await createMember(app, 'BUYER', { email: composed });
  const decomposed = `JOSE\u0301-${id}@example.test`; // E + combining acute accent, upper case
  const res = await login(decomposed, member.password);
  t.is(res.status, 200, res.text);
  const me = await app.request('GET', '/api/v1/members/me', { token: res.body.accessToken });
  t.is(me.body.id, member.id);
  t.is(me.body.email, composed);
  assertError(t, await login(`jose-${id}@example.test`, member.password), 401, 'INVALID_CREDENTIALS');
});
