// The login throttle on its own (with a controllable clock), and login timing: an unknown e-mail costs
// a bcrypt compare just like a wrong password, so response times do not reveal which accounts exist.
import test from 'ava';
import { createLoginThrottle } from '../../lib/auth/login-throttle';
import { TooManyRequestsError } from '../../lib/errors';
import { startTestApp } from '../helpers/harness';
import { createMember, uniq } from '../helpers/factories';

test('throttle: 5 attempts pass, the 6th throws 429 with the seconds left in the window', (t) => {
  let now = 1_000_000;
  const throttle = createLoginThrottle({ now: () => now });
  t.teardown(() => throttle.close());
  for (let i = 0; i < 5; i++) t.notThrows(() => throttle.begin('a@example.test', '10.0.0.1'));
  now += 60_000;
  const err = t.throws(() => throttle.begin('a@example.test', '10.0.0.1'), {
    instanceOf: TooManyRequestsError,
  });
  t.is(err!.status, 429);
  t.is(err!.code, 'TOO_MANY_REQUESTS');
  t.deepEqual(err!.details?.headers, { 'Retry-After': String(15 * 60 - 60) });
  // Other keys are independent.
  t.notThrows(() => throttle.begin('a@example.test', '10.0.0.2'));
  t.notThrows(() => throttle.begin('b@example.test', '10.0.0.1'));
});

test('throttle: the window ends 15 minutes after the first failure, then attempts count afresh', (t) => {
  let now = 5_000_000;
  const throttle = createLoginThrottle({ now: () => now });
  t.teardown(() => throttle.close());
  for (let i = 0; i < 5; i++) throttle.begin('a@example.test', '10.0.0.1');
  now += 15 * 60 * 1000 - 1;
  const err = t.throws(() => throttle.begin('a@example.test', '10.0.0.1'), {
    instanceOf: TooManyRequestsError,
  });
  t.deepEqual(err!.details?.headers, { 'Retry-After': '1' });
  now += 1;
  for (let i = 0; i < 5; i++) t.notThrows(() => throttle.begin('a@example.test', '10.0.0.1'));
  t.throws(() => throttle.begin('a@example.test', '10.0.0.1'), { instanceOf: TooManyRequestsError });
});

test('throttle: success clears the counter', (t) => {
  const throttle = createLoginThrottle();
  t.teardown(() => throttle.close());
  for (let i = 0; i < 5; i++) throttle.begin('a@example.test', '10.0.0.1');
  throttle.succeeded('a@example.test', '10.0.0.1');
  for (let i = 0; i < 5; i++) t.notThrows(() => throttle.begin('a@example.test', '10.0.0.1'));
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

test('login timing: an unknown e-mail takes about as long as a wrong password (a bcrypt compare runs for both)', async (t) => {
  // Cost 10 (~80 ms a compare here) makes the compare dominate the request time.
  const app = await startTestApp({ env: { BCRYPT_COST: '10' } });
  t.teardown(() => app.close());
  const member = await createMember(app);
  const time = async (email: string) => {
    const started = performance.now();
    const res = await app.request('POST', '/api/v1/auth/login', {
      body: { email, password: 'Wrong-password-1' },
    });
    t.is(res.status, 401);
    t.is(res.body.code, 'INVALID_CREDENTIALS');
    return performance.now() - started;
  };
  await time(`warmup-${uniq()}@example.test`); // the first unknown e-mail also computes the timing hash
  const wrong: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < 4; i++) {
    wrong.push(await time(member.email));
    unknown.push(await time(`nobody-${uniq()}@example.test`));
  }
  // Loose bounds: the machine is shared and noisy. Without the compare an unknown e-mail answers ~20x faster.
  const ratio = median(unknown) / median(wrong);
  t.true(
    ratio > 0.4 && ratio < 2.5,
    `unknown ${median(unknown).toFixed(1)} ms vs wrong password ${median(wrong).toFixed(1)} ms`,
  );
  t.true(median(unknown) > 20, `an unknown e-mail must cost a compare (${median(unknown).toFixed(1)} ms)`);
});
