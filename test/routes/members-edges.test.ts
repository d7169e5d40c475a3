// Edges of PATCH /members/me that the main members tests leave open: a non-seller sending back the null
// businessNumber that GET /members/me shows it is no change (not a 400).
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember } from '../helpers/factories';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const ME = '/api/v1/members/me';

test('PATCH /members/me: a buyer or admin sending back businessNumber null (what GET shows) is 200, the other fields applied', async (t) => {
  for (const role of ['BUYER', 'ADMIN'] as const) {
    const member = await createMember(app, role);
    const before = (await app.request('GET', ME, { token: member.token })).body;
    t.is(before.businessNumber, null);
    const res = await app.request('PATCH', ME, {
      token: member.token,
      body: { name: 'Renamed', phone: before.phone, businessNumber: before.businessNumber },
    });
    t.is(res.status, 200, res.text);
    t.is(res.body.name, 'Renamed');
    t.is(res.body.businessNumber, null);
    t.is(res.body.role, role);
    // A non-null one is still refused.
    const refused = await app.request('PATCH', ME, { token: member.token, body: { businessNumber: '1' } });
    assertError(t, refused, 400, 'VALIDATION_ERROR', ME);
    t.deepEqual(refused.body.errors, [
      { field: 'businessNumber', message: 'businessNumber is only for sellers' },
    ]);
  }
});
