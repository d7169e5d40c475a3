// Edges of the category rules that the main category tests leave open (found by mutation testing).
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, uniq, type TestMember } from '../helpers/factories';

let app: TestApp;
let admin: TestMember;
test.before(async () => {
  app = await startTestApp();
  admin = await createMember(app, 'ADMIN');
});
test.after.always(async () => {
  await app?.close();
});

const create = (body: unknown) =>
  app.request('POST', '/api/v1/admin/categories', { body, token: admin.token });

test('displayOrder: -1000000 and 1000000 are accepted, one beyond either is 400 naming displayOrder', async (t) => {
  for (const displayOrder of [-1_000_000, 1_000_000]) {
    const res = await create({ name: `Edge ${uniq()}`, displayOrder });
    t.is(res.status, 201, JSON.stringify(res.body));
    t.like(res.body, { displayOrder, parentId: null });
  }
  const cases: Array<[number, string]> = [
    [-1_000_001, 'displayOrder must be at least -1000000'],
    [1_000_001, 'displayOrder must be at most 1000000'],
  ];
  for (const [displayOrder, message] of cases) {
    const name = `Beyond ${uniq()}`;
    const res = await create({ name, displayOrder });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/admin/categories');
    t.deepEqual(res.body.errors, [{ field: 'displayOrder', message }]);
    t.is(await app.db('categories').where({ name }).first(), undefined);
  }
});
