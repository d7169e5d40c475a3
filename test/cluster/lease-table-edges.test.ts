// Edges of the lease table over real NATS (lease-table.test.ts pins the main paths). A lease is trusted by the
// clock alone, not only by the renewals' bookkeeping: after an event loop stall longer than its validity (a long
// GC pause, a starved CPU: no renewal could run) the holder no longer holds it, because the server has let it go and
// another instance may hold it already. And a leaving instance stops retrying a failed renewal (lease-table.test.ts
// sends its renewal right after SIGSTOP, which the server may still answer before the signal lands: then nothing
// failed and nothing was retried); here the renewal is sent once the server is really stalled, so it fails, and a
// retry would hold up the leave until the lease's validity ran out.
import fs from 'node:fs';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { createLeaseTable } from '../../lib/cluster/lease-table';
import { NATS_URL, natsTest, quietLogger, uniquePrefix, until } from './cluster-fixtures';
import { startPrivateNats } from './private-nats';

const TTL_MS = 1500;
const RENEW_MS = 300;

/** Whether the process is stopped (SIGSTOP delivered): its state in /proc is `T`. */
const stopped = (pid: number) => /^\d+ \(.*\) T /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));

natsTest(
  'after an event loop stall past its validity the holder no longer holds the lease, which another may claim',
  async (t) => {
    const nc = await connect({ servers: NATS_URL });
    const bucket = uniquePrefix('leases-edges');
    const kv = await new Kvm(nc).create(bucket, { ttl: TTL_MS, history: 1, storage: StorageType.File });
    try {
      const jsm = await jetstreamManager(nc);
      const table = () =>
        createLeaseTable({
          kv,
          jsm,
          bucket,
          ttlMs: TTL_MS,
          renewMs: RENEW_MS,
          logger: quietLogger(),
          onLost: () => undefined,
        });
      const holder = table();
      t.true(await holder.claim('shard-1', 'holder'));
      t.true(holder.holds('shard-1'));
      // Blocked past the server's TTL: no timer, no renewal, no answer ran meanwhile.
      const stallEnd = Date.now() + TTL_MS + 100;
      while (Date.now() < stallEnd);
      t.false(holder.holds('shard-1'), 'a lease past its validity is not held');
      // Why: the server let the key go, and the next instance takes it.
      const next = table();
      await until(
        () => next.claim('shard-1', 'next'),
        2000,
        () => 'the key was not free after the lease TTL',
      );
      t.true(next.holds('shard-1'));
      t.false(holder.holds('shard-1'));
    } finally {
      await kv.destroy().catch(() => undefined);
      await nc.close();
    }
  },
);

natsTest(
  'a leaving instance does not retry a renewal that failed on a stalled NATS: it ends within one try',
  async (t) => {
    const nats = await startPrivateNats();
    const nc = await connect({ servers: nats.url });
    try {
      const bucket = uniquePrefix('leases-edges');
      const kvm = new Kvm(nc);
      const kv = await kvm.create(bucket, { ttl: TTL_MS, history: 1, storage: StorageType.File });
      const lost: string[] = [];
      const table = createLeaseTable({
        kv,
        jsm: await jetstreamManager(nc),
        bucket,
        ttlMs: TTL_MS,
        renewMs: RENEW_MS,
        logger: quietLogger(),
        onLost: (key, reason) => void lost.push(`${key}: ${reason}`),
      });
      t.true(await table.claim('shard-1', 'me'));
      nats.pause();
      await until(
        () => stopped(nats.pid()!),
        2000,
        () => 'the private nats-server did not stop',
      );
      const startedAt = Date.now();
      const renewal = table.renewAll(); // its first try gets no answer within RENEW_MS
      await new Promise((resolve) => setTimeout(resolve, RENEW_MS / 3));
      table.stopRetrying();
      await renewal;
      const took = Date.now() - startedAt;
      // One try (RENEW_MS) and a margin; a retry would go on until the lease's validity ends (~1.2 s).
      t.true(
        took >= RENEW_MS - 50 && took < 2 * RENEW_MS + 100,
        `the renewal ended ${took} ms after it began`,
      );
      t.deepEqual(lost, [], 'nothing declared lost: the instance releases its keys next');
      t.true(table.holds('shard-1'), 'still valid');
    } finally {
      nats.resume();
      await nc.close();
      await nats.close();
    }
  },
);
