// The lease table over a real JetStream KV bucket: a lease lost while its consequences take a while to play out
// (a shard's in-flight orders answered first) does not hold up the renewal of the other leases, a release
// racing a renewal leaves the key free, and a stalled NATS server (SIGSTOP on a private one) costs the lease only
// when the stall outlasts it. A key released and claimed again while a renewal waits keeps its new lease, a
// renewal applied whose answer is lost while its key is released does not hold the key until it expires, and the
// clean-up of a lost renewal leaves alone a fresh claim of the key whose answer has not arrived yet. A renewal the
// server applied after the lease was lost is taken back by the next claim, not left to expire.
import { jetstream, jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import {
  createLeaseTable,
  liveKeys,
  type LeaseTable,
  type LeaseTableOptions,
} from '../../lib/cluster/lease-table';
import { NATS_URL, natsTest, quietLogger, uniquePrefix, until } from './cluster-fixtures';
import { startPrivateNats } from './private-nats';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';

const TTL_MS = 1500;
const RENEW_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A lease table on a fresh bucket of its own (TTL_MS, RENEW_MS); the bucket is destroyed afterwards. */
async function withLeaseTable(
  onLost: LeaseTableOptions['onLost'],
  body: (context: { table: LeaseTable; kv: KV; jsm: JetStreamManager; bucket: string }) => Promise<void>,
  servers = NATS_URL,
): Promise<void> {
  const nc = await connect({ servers });
  const bucket = uniquePrefix('leases');
  const kv = await new Kvm(nc).create(bucket, { ttl: TTL_MS, history: 1, storage: StorageType.File });
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

/**
 * A lease table on a fresh bucket whose KV method `split` alone (`get` or `update`) goes over a connection
 * through a TCP proxy, with JetStream requests timing out after `timeoutMs` there; everything else goes direct.
 * With `createAnswerAfter`, a claim's `create` is applied by the server at once but its answer reaches the table
 * only when the promise it returns for that call settles (an answer still on its way). The bucket is destroyed
 * and the connections closed afterwards.
 */
async function withSplitLeaseTable(
  split: 'get' | 'update',
  options: {
    onLost: LeaseTableOptions['onLost'];
    timeoutMs?: number;
    createAnswerAfter?: () => Promise<void>;
  },
  body: (context: {
    table: LeaseTable;
    kv: KV;
    jsm: JetStreamManager;
    bucket: string;
    proxy: TcpProxy;
  }) => Promise<void>,
): Promise<void> {
  const nats = new URL(NATS_URL);
  const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
  const direct = await connect({ servers: NATS_URL });
  const proxied = await connect({ servers: `127.0.0.1:${proxy.port}` });
  const bucket = uniquePrefix('leases');
  try {
    const kv = await new Kvm(direct).create(bucket, { ttl: TTL_MS, history: 1, storage: StorageType.File });
    const proxiedKv = await new Kvm(
      jetstream(proxied, options.timeoutMs ? { timeout: options.timeoutMs } : {}),
    ).open(bucket);
    const splitKv = new Proxy(kv, {
      get(target, property) {
        if (property === split) return proxiedKv[split].bind(proxiedKv);
        const answerAfter = options.createAnswerAfter;
        if (property === 'create' && answerAfter) {
          return async (...args: Parameters<KV['create']>) => {
            const revision = await target.create(...args);
            await answerAfter();
            return revision;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const jsm = await jetstreamManager(direct);
    const table = createLeaseTable({
      kv: splitKv,
      jsm,
      bucket,
      ttlMs: TTL_MS,
      renewMs: RENEW_MS,
      logger: quietLogger(),
      onLost: options.onLost,
    });
    await body({ table, kv, jsm, bucket, proxy });
    await kv.destroy();
  } finally {
    proxy.pass(); // a silenced or holed link is cut and comes back
    await proxied.close().catch(() => undefined);
    await direct.close();
    await proxy.close();
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
      for (const key of ['a', 'b', 'c']) t.true(await table.claim(key, 'me'));
      // The renewal loop as the ownership module runs it: the next round after the previous one ended.
      const renewing = renewingAndSampling(table, 'b');
      try {
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
        t.is(renewing.droppedAt(), null, "'b' was held throughout");
      } finally {
        await renewing.stop();
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

natsTest(
  'a newer revision holding our own value (a renewal applied whose answer was lost) is adopted, not lost',
  (t) => {
    const lost: string[] = [];
    return withLeaseTable(
      (key) => void lost.push(key),
      async ({ table, kv }) => {
        t.true(await table.claim('shard-1', 'me'));
        const claimed = (await kv.get('shard-1'))!.revision;
        // What a lost answer leaves behind: our value at a revision the table never heard of.
        const applied = await kv.put('shard-1', 'me');
        await table.renewAll();
        t.deepEqual(lost, [], 'not lost');
        t.true(table.holds('shard-1'));
        // The renewal went on from the adopted revision: one more write of ours on top of it.
        const current = (await kv.get('shard-1'))!;
        t.true(applied > claimed);
        t.is(current.revision, applied + 1);
        t.is(current.string(), 'me');
        // Someone else's value at a newer revision is not ours: that lease is lost.
        await kv.put('shard-1', 'someone-else');
        await table.renewAll();
        t.deepEqual(lost, ['shard-1']);
        t.false(table.holds('shard-1'));
      },
    );
  },
);

natsTest(
  'a key it lost that holds our own value again (a renewal applied after the loss) is claimed back at once; never one it did not lose',
  (t) => {
    const lost: string[] = [];
    return withLeaseTable(
      (key) => void lost.push(key),
      async ({ table, kv }) => {
        t.true(await table.claim('shard-1', 'me'));
        // The lease is lost (another value fails the next renewal's compare-and-set) ...
        await kv.put('shard-1', 'someone-else');
        await table.renewAll();
        t.deepEqual(lost, ['shard-1']);
        t.false(table.holds('shard-1'));
        t.true(table.mayHoldOurLeftover('shard-1'));
        // ... and then the key holds our value again, at a newer revision: what a renewal of ours the server applied
        // after the table let go leaves behind. Nobody else could claim it until it expired.
        const leftover = await kv.put('shard-1', 'me');
        t.true(await table.claim('shard-1', 'me'));
        t.true(table.holds('shard-1'));
        t.false(table.mayHoldOurLeftover('shard-1'));
        const taken = (await kv.get('shard-1'))!;
        t.is(taken.revision, leftover + 1, 'taken back by a compare-and-set at the leftover revision');
        t.is(taken.string(), 'me');
        await table.renewAll();
        t.is((await kv.get('shard-1'))!.revision, leftover + 2, 'renewed from there');
        // A key holding our value that this table never lost (a former process's, say) is not taken.
        await kv.put('shard-2', 'me');
        t.false(table.mayHoldOurLeftover('shard-2'));
        t.false(await table.claim('shard-2', 'me'));
        // A lost key someone else holds now is not taken, and is forgotten (nothing of ours can arrive any more).
        await kv.put('shard-1', 'someone-else');
        await table.renewAll();
        t.true(table.mayHoldOurLeftover('shard-1'));
        t.false(await table.claim('shard-1', 'me'));
        t.is((await kv.get('shard-1'))!.string(), 'someone-else');
        t.false(table.mayHoldOurLeftover('shard-1'));
      },
    );
  },
);

natsTest(
  'a read after a failed compare-and-set that gets no answer loses the lease when its validity ends, not at the read timeout',
  async (t) => {
    // The table's connection goes through a proxy that silences it at the read (a NATS server that stopped
    // answering); NATS's own request timeout (5 s) is far past the lease's validity.
    const nats = new URL(NATS_URL);
    const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
    const lost: Array<{ key: string; reason: string }> = [];
    try {
      await withLeaseTable(
        (key, reason) => void lost.push({ key, reason }),
        async ({ table, bucket }) => {
          const claimedAt = performance.now();
          t.true(await table.claim('shard-1', 'me'));
          // Another connection writes the key: the next renewal's compare-and-set fails and the table reads it.
          const other = await connect({ servers: NATS_URL });
          try {
            await (await new Kvm(other).open(bucket)).put('shard-1', 'someone-else');
          } finally {
            await other.close();
          }
          const silenced = proxy.silenceOn(`GET.KV_${bucket}`);
          await table.renewAll();
          const lostAfter = performance.now() - claimedAt;
          t.true(
            await Promise.race([silenced.then(() => true), sleep(0).then(() => false)]),
            'the read was sent',
          );
          t.deepEqual(
            lost.map(({ key }) => key),
            ['shard-1'],
          );
          t.regex(lost[0].reason, /not renewed in time/);
          // Lost once its validity (TTL minus one renewal period after the claim) ran out: with a margin for a
          // loaded machine, and far from the read's own 5 s timeout, where it was lost before.
          t.true(lostAfter < TTL_MS - RENEW_MS + 1500, `lost after ${Math.round(lostAfter)} ms`);
          t.false(table.holds('shard-1'));
          proxy.pass(); // the silenced connection is cut and comes back, so the bucket can be destroyed
        },
        `127.0.0.1:${proxy.port}`,
      );
    } finally {
      await proxy.close();
    }
  },
);

/** Renews every RENEW_MS as the ownership module does and samples `holds(key)` every 2 ms until stopped. */
function renewingAndSampling(table: LeaseTable, key: string) {
  let running = true;
  let droppedAt: number | null = null;
  const loop = (async () => {
    while (running) {
      await table.renewAll();
      await sleep(RENEW_MS);
    }
  })();
  const sampler = setInterval(() => {
    if (droppedAt === null && !table.holds(key)) droppedAt = Date.now();
  }, 2);
  return {
    droppedAt: () => droppedAt,
    async stop() {
      running = false;
      clearInterval(sampler);
      await loop;
    },
  };
}

/**
 * A lease table (as `withLeaseTable`) on a private nats-server the test may stall (`nats.pause()`); the leases
 * lost are collected as `key: reason`. NATS is let go on before the bucket is destroyed.
 */
async function withStallableNats(
  body: (context: {
    table: LeaseTable;
    kv: KV;
    nats: Awaited<ReturnType<typeof startPrivateNats>>;
    lost: string[];
  }) => Promise<void>,
): Promise<void> {
  const nats = await startPrivateNats();
  const lost: string[] = [];
  try {
    await withLeaseTable(
      (key, reason) => void lost.push(`${key}: ${reason}`),
      async ({ table, kv }) => {
        try {
          await body({ table, kv, nats, lost });
        } finally {
          nats.resume();
        }
      },
      nats.url,
    );
  } finally {
    await nats.close();
  }
}

natsTest(
  'NATS stalled for less than the lease: the renewal is tried again and the lease is never dropped',
  (t) =>
    withStallableNats(async ({ table, kv, nats, lost }) => {
      t.true(await table.claim('shard-1', 'me'));
      const renewing = renewingAndSampling(table, 'shard-1');
      try {
        await sleep(RENEW_MS + 100); // renewed at least once
        const before = (await kv.get('shard-1'))!.revision;
        // Longer than a renewal's wait for its answer, well within the lease: a renewal sent meanwhile is
        // answered by nobody, and on SIGCONT the server applies it (its answer arrives too late to count).
        nats.pause();
        await sleep(2 * RENEW_MS);
        nats.resume();
        await sleep(3 * RENEW_MS);
        t.deepEqual(lost, []);
        t.is(renewing.droppedAt(), null, 'held throughout');
        const after = await kv.get('shard-1');
        t.is(after?.string(), 'me');
        t.true(after!.revision > before + 1, `renewed since: revision ${before} -> ${after?.revision}`);
      } finally {
        await renewing.stop();
      }
    }),
);

natsTest(
  'NATS stalled for longer than the lease: the holder lets go while the server is still stalled',
  (t) =>
    withStallableNats(async ({ table, nats, lost }) => {
      t.true(await table.claim('shard-1', 'me'));
      const renewing = renewingAndSampling(table, 'shard-1');
      try {
        await sleep(RENEW_MS + 100);
        nats.pause();
        const pausedAt = Date.now();
        // The server's TTL counts from the last renewal it applied, before the pause: nobody could claim the
        // key before pausedAt + TTL_MS, and the holder stops serving it one renewal period before that.
        await until(
          () => renewing.droppedAt() !== null && lost.length > 0,
          TTL_MS + 500,
          () => `lost: ${lost}`,
        );
        // Its last renewal was at most at pausedAt: served until then + TTL - one renewal period (sampled every 2 ms).
        const droppedAfter = renewing.droppedAt()! - pausedAt;
        t.true(droppedAfter < TTL_MS - RENEW_MS + 100, `dropped ${droppedAfter} ms after the stall began`);
        t.true(Date.now() - pausedAt < TTL_MS + 500, 'while NATS is still stalled');
        t.is(lost.length, 1);
        t.regex(lost[0], /^shard-1: not renewed in time/);
      } finally {
        nats.resume(); // the renewals' last tries end at once
        await renewing.stop();
      }
    }),
);

natsTest(
  'a key released and claimed again while the read after a failed compare-and-set waits keeps its new lease',
  async (t) => {
    // The table's reads (kv.get) go over a connection through a proxy that silences them; its writes go direct,
    // so a release and a new claim can land while the read waits. The read then runs out with the old lease's
    // validity, which must not cost the new lease.
    const lost: Array<{ key: string; reason: string }> = [];
    const onLost = (key: string, reason: string) => void lost.push({ key, reason });
    await withSplitLeaseTable('get', { onLost }, async ({ table, kv, bucket, proxy }) => {
      t.true(await table.claim('shard-1', 'me'));
      await kv.put('shard-1', 'someone-else'); // the next renewal's compare-and-set fails and the table reads
      const silenced = proxy.silenceOn(`GET.KV_${bucket}`);
      const renewal = table.renewAll();
      await silenced;
      // While the read waits (halfway through the old lease's validity, so the new one outlives it by as much):
      // the instance lets the key go, the other holder's entry goes, and this table claims the key again.
      await sleep((TTL_MS - RENEW_MS) / 2);
      await table.release('shard-1');
      await kv.delete('shard-1');
      t.true(await table.claim('shard-1', 'me'));
      const reclaimed = (await kv.get('shard-1'))!.revision;
      await renewal; // the read ran out with the old lease's validity
      t.deepEqual(lost, [], 'the old lease was released, not lost, and the new one stays');
      t.true(table.holds('shard-1'));
      t.deepEqual(table.keys(), ['shard-1']);
      // The new lease is renewed from its own revision.
      await table.renewAll();
      const renewed = (await kv.get('shard-1'))!;
      t.is(renewed.string(), 'me');
      t.is(renewed.revision, reclaimed + 1);
      t.deepEqual(lost, []);
    });
  },
);

natsTest(
  'a renewal applied whose answer is lost while its key is released is removed: the key is free before it expires',
  (t) =>
    // The table's compare-and-set renewals (kv.update) go over a connection through a proxy that forwards the
    // renewal and loses its answer (then cuts the link); everything else goes direct, so the release lands
    // while the renewal waits for an answer that never comes. A short request timeout there, so the lost answer
    // shows well within the lease's life.
    withSplitLeaseTable(
      'update',
      { onLost: () => undefined, timeoutMs: 300 },
      async ({ table, kv, jsm, bucket, proxy }) => {
        t.true(await table.claim('shard-1', 'me'));
        const claimed = (await kv.get('shard-1'))!.revision;
        const lostAnswer = proxy.cutOn(`$KV.${bucket}.shard-1`, { forward: true });
        const renewal = table.renewAll();
        // The renewal reached the server and was applied: our value at a newer revision.
        await until(
          async () => ((await kv.get('shard-1'))?.revision ?? 0) > claimed,
          2000,
          () => 'the renewal was not applied',
        );
        const released = Date.now();
        await table.release('shard-1'); // removes the claimed revision, which the renewal replaced
        t.true((await kv.get('shard-1'))?.string() === 'me', 'the applied renewal still holds the key');
        await lostAnswer;
        await renewal; // its answer never came
        t.deepEqual(await liveKeys(jsm, bucket), [], 'nothing left in the bucket');
        t.true(Date.now() - released < TTL_MS, `free after ${Date.now() - released} ms, before the TTL`);
        t.true(
          await kv.create('shard-1', 'other').then(
            () => true,
            () => false,
          ),
          'another instance can claim it',
        );
        t.false(table.holds('shard-1'));
      },
    ),
);

natsTest(
  "a lost renewal's clean-up leaves alone a fresh claim whose answer has not arrived yet",
  async (t) => {
    // The renewal (over the proxy) gets no answer: the proxy forwards nothing, so it was not applied. While it
    // waits, the instance releases the key and claims it again; that claim is applied at once, but its answer is
    // held until the renewal has given up and read the key. The read finds our value at a newer revision, as an
    // applied renewal would leave it: it is the fresh claim's, and must stay.
    let answerHeld: Promise<void> = Promise.resolve();
    const lost: string[] = [];
    await withSplitLeaseTable(
      'update',
      { onLost: (key) => void lost.push(key), timeoutMs: 300, createAnswerAfter: () => answerHeld },
      async ({ table, kv, proxy }) => {
        t.true(await table.claim('shard-1', 'me'));
        proxy.blackhole();
        const renewal = table.renewAll();
        await table.release('shard-1');
        let answer!: () => void;
        answerHeld = new Promise<void>((resolve) => (answer = resolve));
        const claim = table.claim('shard-1', 'me');
        await until(
          async () => (await kv.get('shard-1'))?.string() === 'me',
          2000,
          () => 'the new claim was not applied',
        );
        const reclaimed = (await kv.get('shard-1'))!.revision;
        await renewal; // timed out, then read the key while the claim's answer was still held
        answer();
        t.true(await claim);
        // Removed, the next renewal's compare-and-set would find no key and lose the lease.
        t.is(
          (await kv.get('shard-1'))?.revision,
          reclaimed,
          "the fresh claim's revision is still in the bucket",
        );
        t.true(table.holds('shard-1'));
        t.deepEqual(lost, []);
      },
    );
  },
);
