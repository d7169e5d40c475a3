// A password change whose COMMIT reached MariaDB but whose answer was lost (the connection cut right after the
// COMMIT was sent): the change applied, the client got an error, and the member's old access tokens must stop
// working anyway. The member service announces the change (`membersChanged`) whatever the transaction's outcome,
// so this process's cache of the member's token version is dropped, not kept for AUTH_MEMBER_CACHE_SECONDS.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { onMariaDb, SKIPPED_ON_SQLITE, startBehindProxy, type ProxiedService } from './fault-fixtures';

if (!onMariaDb) {
  test.skip(SKIPPED_ON_SQLITE, () => {});
} else {
  let service: ProxiedService;

  test.before(async () => {
    service = await startBehindProxy({
      env: { AUTH_MEMBER_CACHE_SECONDS: '60' },
      world: { buyers: 1, products: 0, stock: 0 },
    });
  });
  test.after.always(() => service?.close());

  test.serial(
    "a password change whose COMMIT's answer was lost still ends the old access tokens here at once",
    async (t) => {
      const [buyer] = service.world.buyers;
      const { app } = service;
      // The member's token version is cached now (for 60 s).
      t.is((await app.request('GET', '/api/v1/members/me', { token: buyer.token })).status, 200);
      const before = await service.db('members').where('id', buyer.id).first('token_version');

      const cut = service.proxy.cutOn('COMMIT', { forward: true, after: 'token_version' });
      const changed = await app.request('PATCH', '/api/v1/members/me', {
        token: buyer.token,
        body: { password: 'New-password-1', currentPassword: buyer.password },
      });
      await cut;
      assertError(t, changed, 503, 'SERVICE_UNAVAILABLE', '/api/v1/members/me');
      t.truthy(changed.headers.get('retry-after'));
      // The COMMIT reached the server: the change applied.
      const after = await service.db('members').where('id', buyer.id).first('token_version');
      t.is(Number(after.token_version), Number(before.token_version) + 1);

      assertError(
        t,
        await app.request('GET', '/api/v1/members/me', { token: buyer.token }),
        401,
        'INVALID_TOKEN',
        '/api/v1/members/me',
      );
    },
  );
}
