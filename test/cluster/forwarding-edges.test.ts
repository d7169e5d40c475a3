// A leaving owner keeps a shard's key until every answer it owes for that shard went out, also for requests that
// reached it over NATS (forwarding.test.ts pins the in-place case): on the shard's subject (a caller that does not
// know the owner) and on the owner's own subject (a caller whose owner map names it). Deleting the key first would
// let the next owner run the shard's requests while the leaving one still runs its last. And while it waits for
// those answers the shard is no longer its to serve: a request made meanwhile is refused, never run there. On the
// caller's side, a shard handed over on a join is unowned for at most a balancing round, and a request caught in
// that gap asks again until the new owner answers: a join under traffic answers every request.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { ExecutionContext } from 'ava';
import { ServiceUnavailableError } from '../../lib/errors';
import { createForwarder, OwnerDidNotAnswerError } from '../../lib/cluster/forwarding';
import { bucketNames, type Cluster } from '../../lib/cluster/cluster';
import { liveKeys } from '../../lib/cluster/lease-table';
import {
  cleanup,
  exactlyOnce,
  forwarderSettings,
  NATS_URL,
  natsTest,
  productIn,
  shareReport,
  startNode,
  uniquePrefix,
  until,
} from './cluster-fixtures';

/**
 * One node owning all 64 shards, whose handler holds every request until `open()`; a bare forwarder on its own
 * connection sends one request for shard 5 (through the owner's subject when `viaOwner`, else the shard's), and
 * the node leaves while it is held.
 */
async function leaveWhileForwardedRequestRuns(t: ExecutionContext, viaOwner: boolean): Promise<void> {
  const prefix = uniquePrefix(viaOwner ? 'held-owner' : 'held-shard');
  const nodes: Cluster[] = [];
  const connections: NatsConnection[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  try {
    const node = await startNode(prefix, 'node-a');
    nodes.push(node);
    node.serve(async ({ productId, origin }) => {
      started();
      await gate;
      return { productId, origin };
    });
    await node.start();
    await until(
      () => exactlyOnce(nodes, 64, 64),
      10_000,
      () => shareReport(nodes),
    );
    const nc = await connect({ servers: NATS_URL });
    connections.push(nc);
    const unanswered: string[] = [];
    const caller = createForwarder({
      ...forwarderSettings(prefix, { requestTimeoutMs: 5000 }),
      nc,
      instanceId: 'caller',
      owns: () => false,
      // Through the owner's subject: nobody answering it (a wrong address) would fall back to the shard's.
      ...(viaOwner
        ? { ownerOf: () => node.address, ownerGone: (gone: string) => void unanswered.push(gone) }
        : {}),
    });
    const productId = productIn(5);
    const forwarded = caller.request(productId, {});
    await running;

    let closed = false;
    const closing = node.close().then(() => (closed = true));
    const jsm = await jetstreamManager(nc);
    const shardsBucket = bucketNames(prefix).shards;
    await until(
      async () => !(await liveKeys(jsm, shardsBucket)).includes('shard-6'),
      5000,
      () => 'the other shards were not released',
    );
    t.true(
      (await liveKeys(jsm, shardsBucket)).includes('shard-5'),
      'the shard is kept while its forwarded request runs',
    );
    t.false(closed);
    open();
    t.deepEqual(await forwarded, { productId, origin: 'caller' });
    t.deepEqual(unanswered, [], 'no owner subject went unanswered');
    await closing;
    t.false((await liveKeys(jsm, shardsBucket)).includes('shard-5'), 'released once it was answered');
  } finally {
    open();
    await Promise.all(connections.map((nc) => nc.close()));
    await cleanup(prefix, nodes);
  }
}

natsTest(
  "a shard released while a request forwarded on the shard's subject runs keeps its key until that request is answered",
  (t) => leaveWhileForwardedRequestRuns(t, false),
);

natsTest(
  "a shard released while a request forwarded on its owner's subject runs keeps its key until that request is answered",
  (t) => leaveWhileForwardedRequestRuns(t, true),
);

natsTest(
  'a shard being handed over (its last answer still running) is not served: a new request for it is a 503, never run',
  async (t) => {
    const prefix = uniquePrefix('releasing');
    const nodes: Cluster[] = [];
    const nc = await connect({ servers: NATS_URL });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let calls = 0;
    try {
      const node = await startNode(prefix, 'node-a');
      nodes.push(node);
      node.serve(async ({ productId }) => {
        calls++;
        await gate;
        return { productId };
      });
      await node.start();
      await until(
        () => exactlyOnce(nodes, 64, 64),
        10_000,
        () => shareReport(nodes),
      );
      // Held in place: shard 5's release waits for it.
      const first = node.request(productIn(5), {});
      const closing = node.close();
      const jsm = await jetstreamManager(nc);
      await until(
        async () => !(await liveKeys(jsm, bucketNames(prefix).shards)).includes('shard-6'),
        5000,
        () => 'the other shards were not released',
      );
      t.false(node.isOwner(productIn(5)), 'a shard being handed over is not owned');
      const second = node.request(productIn(5, 64, 2), {}).then(
        () => 'ran' as const,
        (err: unknown) => err,
      );
      // Refused within its handover wait (0.6 x CLUSTER_RENEW_MS), while the first request is still held.
      const outcome = await Promise.race([
        second,
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3000)),
      ]);
      t.is(calls, 1, 'the request made during the handover never ran');
      open();
      t.true(outcome instanceof ServiceUnavailableError, String(outcome));
      t.deepEqual(await first, { productId: productIn(5) });
      await closing;
    } finally {
      open();
      await nc.close();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'a join under traffic: requests for the shards handed over meanwhile all reach an owner, none is a 503',
  async (t) => {
    const prefix = uniquePrefix('join-traffic');
    const nodes: Cluster[] = [];
    let front: Cluster | undefined;
    try {
      const a = await startNode(prefix, 'node-a');
      nodes.push(a);
      const b = await startNode(prefix, 'node-b');
      nodes.push(b);
      for (const node of nodes) node.serve(async () => ({ servedBy: node.instanceId }));
      await a.start();
      await until(
        () => exactlyOnce([a], 64, 64),
        10_000,
        () => shareReport([a]),
      );
      // A node that never joins (its owner map never watched): every request goes on its shard's subject.
      front = await startNode(prefix, 'front');
      const caller = front;
      const failures: string[] = [];
      const servedBy = new Set<string>();
      let sent = 0;
      let joined = false;
      const traffic = (async () => {
        while (!joined) {
          const round = Array.from({ length: 64 }, (_, shard) =>
            caller.request<{ servedBy: string }>(productIn(shard), {}).then(
              (value) => void servedBy.add(value.servedBy),
              (err: unknown) => void failures.push(`shard ${shard}: ${(err as Error).message}`),
            ),
          );
          sent += round.length;
          await Promise.all(round);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      await b.start();
      await until(
        () => exactlyOnce(nodes, 64, 32),
        10_000,
        () => shareReport(nodes),
      );
      joined = true;
      await traffic;
      t.log(`${sent} requests while node-b joined`);
      t.deepEqual(failures, []);
      t.deepEqual([...servedBy].sort(), ['node-a', 'node-b']);
    } finally {
      await cleanup(prefix, [...nodes, front]);
    }
  },
);

natsTest(
  'an answer of a shape this version does not read fails its requests as outcome unknown (503), never the process',
  async (t) => {
    const prefix = uniquePrefix('malformed');
    const connections = [await connect({ servers: NATS_URL }), await connect({ servers: NATS_URL })];
    try {
      const [owner, callerNc] = connections;
      // An owner of another version: a reply that is not an object, and one whose item is not one.
      owner.subscribe(`${prefix}.shard.3`, { callback: (_err, msg) => void msg.respond('null') });
      owner.subscribe(`${prefix}.owner.other`, {
        callback: (_err, msg) => void msg.respond('{"v":3,"ok":true,"items":[null]}'),
      });
      await owner.flush();
      const caller = createForwarder({
        ...forwarderSettings(prefix),
        nc: callerNc,
        instanceId: 'caller',
        owns: () => false,
        ownerOf: (shard) => (shard === 4 ? 'other' : null),
      });
      for (const shard of [3, 4]) {
        const error = await t.throwsAsync(caller.request(productIn(shard), {}), {
          instanceOf: OwnerDidNotAnswerError,
          message: new RegExp(
            `^Shard ${shard} (did not answer|answered in a form this instance does not read); please retry$`,
          ),
        });
        t.is(error?.retryAfterSeconds, 4);
      }
    } finally {
      await Promise.all(connections.map((nc) => nc.close()));
    }
  },
);
