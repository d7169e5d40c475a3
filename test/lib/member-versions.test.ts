// The member-version check of access tokens (lib/auth/member-versions.ts) against the test database: a change
// made by this process (forget) wins over a read of the member that was under way when it happened.
import test from 'ava';
import { createMemberVersions } from '../../lib/auth/member-versions';
import { startTestApp, type TestApp } from '../helpers/harness';
import { createMember } from '../helpers/factories';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test("a password change forgotten while a newer token's re-read is under way: that read's version is not kept", async (t) => {
  const versions = createMemberVersions({ db: app.db, ttlSeconds: 60 });
  t.teardown(() => versions.close());
  const member = await createMember(app, 'BUYER');
  const claims = (tokenVersion: number) => ({ id: member.id, role: 'BUYER' as const, tokenVersion });
  await versions.check(claims(0)); // version 0 cached

  // Version 1 is issued elsewhere (a login after a change on another instance); this process still caches 0, so
  // the token's check reads the member again. Right after that read (version 1) answers, and before the check
  // goes on, this process changes the password once more (version 2) and forgets the member.
  await app.db('members').where('id', member.id).update({ token_version: 1 });
  let changed: Promise<unknown> | undefined;
  const onResponse = (_response: unknown, query: { sql: string }) => {
    if (changed || !query.sql.includes('token_version')) return;
    changed = app.db('members').where('id', member.id).update({ token_version: 2 });
    versions.forget(member.id);
  };
  app.db.on('query-response', onResponse);
  try {
    await versions.check(claims(1)); // version 1 was current when it was read
  } finally {
    app.db.off('query-response', onResponse);
  }
  t.truthy(changed, 'the change happened during the re-read');
  await changed;

  // Version 1 is revoked now. Before, the re-read's version 1 was written back over the forget and served for the
  // cache's TTL.
  await t.throwsAsync(versions.check(claims(1)), { message: /password or role changed/ });
  t.deepEqual(await versions.check(claims(2)), { id: member.id, role: 'BUYER' });
});
