// Scheduled pruning (PRUNE_INTERVAL_SECONDS, here 1 s): used, revoked and expired refresh tokens and
// Idempotency-Keys past their window are deleted, so a client refreshing in a loop no longer grows the table by a
// row per refresh for 7 days. Replaying a pruned token is still recognised as reuse and revokes its family.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, login } from '../helpers/factories';

let app: TestApp;
test.before(async () => {
  // A refresh loop from one address: the per-address refresh limit is not what this test is about.
  app = await startTestApp({ env: { PRUNE_INTERVAL_SECONDS: '1', REFRESH_ADDRESS_LIMIT: 'off' } });
});
test.after.always(async () => {
  await app?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rowsOf = async (memberId: number) =>
  Number((await app.db('refresh_tokens').where('member_id', memberId).count({ n: '*' }))[0].n);
const refresh = (refreshToken: string) =>
  app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken } });

test('a refresh loop keeps the table bounded; a replayed pruned token still revokes the session', async (t) => {
  const member = await createMember(app, 'BUYER');
  let token = (await login(app, member)).refreshToken;
  const first = token;
  let refreshes = 0;
  const counts: number[] = [];
  const started = Date.now();
  while (Date.now() - started < 3500) {
    const res = await refresh(token);
    t.is(res.status, 200, res.text);
    token = res.body.refreshToken;
    refreshes++;
    if (refreshes % 5 === 0) counts.push(await rowsOf(member.id));
  }
  t.log(`${refreshes} refreshes, rows sampled during the loop: ${counts.join(' ')}`);
  t.true(
    counts.some((n, i) => i > 0 && n < counts[i - 1]),
    'rows were pruned while the loop ran',
  );
  t.true(Math.max(...counts) < refreshes, 'fewer rows than refreshes');

  await sleep(2200); // at least one more pruning pass
  t.is(await rowsOf(member.id), 1, 'only the live token is left');
  t.is((await app.db('refresh_tokens').where('member_id', member.id).first()).used_at, null);

  // The first token's row is long gone; presenting it is still a replay: 401, and the family is revoked.
  const replay = await refresh(first);
  assertError(t, replay, 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  t.regex(replay.body.message, /already used/);
  const newest = await refresh(token);
  assertError(t, newest, 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  t.regex(newest.body.message, /revoked|invalid/); // "invalid" once a pass has pruned the revoked rows too

  // Logout of a family whose rows are pruned stays an idempotent 204.
  await sleep(2200);
  t.is(await rowsOf(member.id), 0);
  const logout = await app.request('POST', '/api/v1/auth/logout', { body: { refreshToken: token } });
  t.is(logout.status, 204);
  t.is(logout.text, '');
});

test('expired refresh tokens and Idempotency-Keys past their window are deleted; live ones stay', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const live = (await login(app, buyer)).refreshToken;
  const past = new Date(Date.now() - 60_000);
  await app.db('refresh_tokens').insert({
    member_id: buyer.id,
    family_id: 'expired-family',
    token_hash: 'e'.repeat(64),
    expires_at: past,
    created_at: past,
  });
  const key = (idemKey: string, expiresAt: Date) => ({
    buyer_id: buyer.id,
    idem_key: idemKey,
    request_hash: 'h'.repeat(64),
    response_status: 201,
    response_body: '[]',
    created_at: past,
    expires_at: expiresAt,
  });
  await app
    .db('idempotency_keys')
    .insert([key('old-key', past), key('live-key', new Date(Date.now() + 3_600_000))]);

  await sleep(2200);
  t.deepEqual(
    (await app.db('idempotency_keys').where('buyer_id', buyer.id).select('idem_key')).map((r) => r.idem_key),
    ['live-key'],
  );
  t.is(await rowsOf(buyer.id), 1);
  t.is(await app.db('refresh_tokens').where('family_id', 'expired-family').first(), undefined);
  const stillWorks = await refresh(live);
  t.is(stillWorks.status, 200, stillWorks.text);
  t.is(typeof stillWorks.body.accessToken, 'string');
});
