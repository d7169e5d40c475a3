// Scheduled pruning of the outbox (lib/notifications/outbox.ts pruneDeliveredOutbox, one of the pruner's targets):
// rows delivered more than a day ago go, pending and recently delivered ones stay, the newest row always stays
// (so ids never start over), and the notifications the pruned rows made are kept.
import test from 'ava';
import { DELIVERED_OUTBOX_KEPT_MS, pruneDeliveredOutbox, writeOutbox } from '../../lib/notifications/outbox';
import { createMember } from '../helpers/factories';
import { startTestApp } from '../helpers/harness';

test('delivered rows older than a day are pruned; pending, recent and the newest row stay; notifications stay', async (t) => {
  const app = await startTestApp();
  try {
    await app.bundle.services.dispatcher.stop(); // this test marks rows delivered itself
    const seller = await createMember(app, 'SELLER');
    const events = [0, 1, 2, 3, 4].map((n) => ({
      type: 'OrderCreated' as const,
      recipientId: seller.id,
      payload: { sellerId: seller.id, orderId: 7200 + n, orderNumber: `N-${7200 + n}` },
    }));
    await app.db.transaction((trx) => writeOutbox(trx, events, new Date(), 'prune-1'));
    const ids = (
      await app.db('notification_outbox').where('recipient_id', seller.id).orderBy('id').select('id')
    ).map((row: { id: number }) => Number(row.id));
    const now = new Date();
    const old = new Date(now.getTime() - DELIVERED_OUTBOX_KEPT_MS - 60_000);
    const recent = new Date(now.getTime() - 60_000);
    // 0 and 1 delivered long ago, 2 recently, 3 pending; 4 (the newest) delivered long ago too.
    await app.db('notification_outbox').whereIn('id', [ids[0], ids[1], ids[4]]).update({ delivered_at: old });
    await app.db('notification_outbox').where('id', ids[2]).update({ delivered_at: recent });
    await app.db('notifications').insert(
      [ids[0], ids[1]].map((id) => ({
        member_id: seller.id,
        outbox_id: id,
        type: 'OrderCreated',
        payload: '{}',
        created_at: old,
      })),
    );
    const newest = Number((await app.db('notification_outbox').max({ id: 'id' }).first())!.id);
    t.is(newest, ids[4]);

    t.is(await pruneDeliveredOutbox(app.db, now), 2);
    const left = (await app.db('notification_outbox').whereIn('id', ids).orderBy('id').select('id')).map(
      (row: { id: number }) => Number(row.id),
    );
    t.deepEqual(left, [ids[2], ids[3], ids[4]]);
    t.is((await app.db('notifications').whereIn('outbox_id', [ids[0], ids[1]])).length, 2);
    t.is(await pruneDeliveredOutbox(app.db, now), 0, 'a second pass finds nothing');

    // The pruner runs it with the other targets.
    const deleted = await app.bundle.services.pruner.pruneOnce();
    t.is(deleted.deliveredOutbox, 0);
  } finally {
    await app.close();
  }
});
