// The lease table over a real JetStream KV bucket: a lease lost while its consequences take a while to play out
// (a shard's in-flight orders answered first) does not hold up the renewal of the other leases, and a release
// racing a renewal leaves the key free.
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import {
  createLeaseTable,
  liveKeys,
  type LeaseTable,
  type LeaseTableOptions,
} from '../../lib/cluster/lease-table';
import { NATS_URL, natsTest, quietLogger, uniquePrefix, until } from './cluster-fixtures';

const TTL_MS = 1500;
const RENEW_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A lease table on a fresh bucket of its own (TTL_MS, RENEW_MS); the bucket is destroyed afterwards. */
async function withLeaseTable(
  onLost: LeaseTableOptions['onLost'],
  body: (context: { table: LeaseTable; kv: KV; jsm: JetStreamManager; bucket: string }) => Promise<void>,
): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  const bucket = uniquePrefix('leases');
  const kv = await new Kvm(nc).create(bucket, { ttl: TTL_MS, history: 1, storage: StorageType.Memory });
  const jsm = await jetstreamManager(nc);
  const table = createLeaseTable({
    kv,
    jsm,
    bucket,
    ttlMs: TTL_MS,
    renewMs: RENEW_MS,
    logger: quietLogger(),
    onLost,
  });
  try {
    await body({ table, kv, jsm, bucket });
  } finally {
    await kv.destroy().catch(() => undefined);
    await nc.close();
  }
}

natsTest(
  'a lease lost with a slow aftermath does not stop the other leases from being renewed',
  async (t) => {
    const lost: string[] = [];
    let aftermathDone = false;
    const onLost = async (key: string) => {
      lost.push(key);
      // What losing a shard sets off can take longer than a lease's life (its orders' group commit).
      await sleep(2 * TTL_MS);
      aftermathDone = true;
    };
    await withLeaseTable(onLost, async ({ table, kv }) => {
      // The renewal loop as the ownership module runs it: the next round after the previous one ended.
      let running = true;
      const loop = (async () => {
        while (running) {
          await table.renewAll();
          await sleep(RENEW_MS);
        }
      })();
      try {
        for (const key of ['a', 'b', 'c']) t.true(await table.claim(key, 'me'));
        // Someone else writes 'a': its next renewal's compare-and-set fails and the lease is lost.
        await kv.put('a', 'someone-else');
        await until(
          () => lost.includes('a'),
          3000,
          () => `lost: ${lost}`,
        );
        // Longer than a lease's life while the aftermath of losing 'a' still runs: 'b' and 'c' stay held.
        await sleep(TTL_MS + RENEW_MS);
        t.false(aftermathDone, 'the aftermath is still running');
        t.true(table.holds('b') && table.holds('c'), `held: ${table.keys()}, lost: ${lost}`);
        t.deepEqual(lost, ['a']);
        t.false(table.holds('a'));
      } finally {
        running = false;
        await loop;
      }
    });
  },
);

natsTest('a release while a renewal is in flight leaves the key free at once, not until it expires', (t) =>
  withLeaseTable(
    () => undefined,
    async ({ table, kv, jsm, bucket }) => {
      t.true(await table.claim('shard-1', 'me'));
      // The renewal's update is sent first (one connection keeps the order), so it replaces the revision the
      // release then tries to remove.
      const renewal = table.renewAll();
      const release = table.release('shard-1');
      await Promise.all([renewal, release]);
      t.false(table.holds('shard-1'));
      t.deepEqual(await liveKeys(jsm, bucket), [], 'nothing left in the bucket');
      // Another instance can claim it at once.
      t.true(
        await kv.create('shard-1', 'other').then(
          () => true,
          () => false,
        ),
      );
    },
  ),
);
