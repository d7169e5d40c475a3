// Forwarding to a shard's owner over real NATS request/reply, seen through the app's own error handler (so
// status, headers and body are what a client would get): answers come from the owner, AppErrors keep their
// class, status and code, and whatever keeps a request from an owner is a quick 503 with Retry-After. The
// requests for one shard made in one event-loop turn travel as one NATS request and keep their own answers.
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import Koa from 'koa';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { ExecutionContext } from 'ava';
import {
  AppError,
  ConflictError,
  NotFoundError,
  ServiceUnavailableError,
  ValidationError,
} from '../../lib/errors';
import { errorHandler } from '../../lib/http/error-handler';
import { createForwarder, OwnerDidNotAnswerError } from '../../lib/cluster/forwarding';
import { bucketNames, type Cluster } from '../../lib/cluster/cluster';
import { liveKeys } from '../../lib/cluster/lease-table';
import { jetstreamManager } from '@nats-io/jetstream';
import { request as httpRequest } from '../helpers/harness';
import { startTcpProxy } from '../helpers/tcp-proxy';
import {
  cleanup,
  exactlyOnce,
  forwarderSettings,
  NATS_URL,
  natsTest,
  productIn,
  quietLogger,
  shareReport,
  startNode,
  uniquePrefix,
  until,
} from './cluster-fixtures';

/** A one-route HTTP server: GET /products/:id asks the cluster for product :id through `via`. */
async function gateway(via: Cluster) {
  const app = new Koa();
  app.use(errorHandler(quietLogger()));
  app.use(async (ctx) => {
    const productId = Number(ctx.path.split('/').pop());
    ctx.body = await via.request(productId, { action: ctx.query.action ?? 'read' });
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    get: (productId: number, action = 'read') =>
      httpRequest(url, 'GET', `/products/${productId}?action=${action}`),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function serveAll(nodes: Cluster[]): void {
  for (const node of nodes) {
    node.serve(async ({ productId, payload, origin, shard }) => {
      const { action } = payload as { action: string };
      if (action === 'conflict')
        throw new ConflictError('INSUFFICIENT_STOCK', `Product ${productId} is short`);
      if (action === 'missing') throw new NotFoundError(`Product ${productId} not found`);
      if (action === 'invalid') {
        throw new ValidationError('Invalid request', [
          { field: 'quantity', message: 'quantity must be at least 1' },
        ]);
      }
      if (action === 'crash') throw new Error('a bug with a secret inside');
      if (action === 'slow') await new Promise((resolve) => setTimeout(resolve, 2_000));
      return { productId, shard, servedBy: node.instanceId, origin, at: new Date(0) };
    });
  }
}

/**
 * Starts a serving node per id (each pushed onto `nodes` at once, so the caller's cleanup reaches it) and waits
 * until they hold the 64 shards exactly once, each its fair share.
 */
async function startServingNodes(
  prefix: string,
  ids: string[],
  nodes: Cluster[],
  env: Record<string, string> = {},
): Promise<void> {
  for (const id of ids) nodes.push(await startNode(prefix, `node-${id}`, env));
  serveAll(nodes);
  await Promise.all(nodes.map((node) => node.start()));
  await until(
    () => exactlyOnce(nodes, 64, Math.ceil(64 / ids.length)),
    10_000,
    () => shareReport(nodes),
  );
}

natsTest(
  'a request reaches the owner of its product, from any node, or runs in place on the owner',
  async (t) => {
    const prefix = uniquePrefix('fwd');
    const nodes: Cluster[] = [];
    const gateways: Array<Awaited<ReturnType<typeof gateway>>> = [];
    try {
      await startServingNodes(prefix, ['a', 'b', 'c'], nodes);
      for (const node of nodes) gateways.push(await gateway(node));
      for (const shard of [0, 7, 31, 63]) {
        const productId = productIn(shard);
        const owner = nodes.find((node) => node.isOwner(productId))!;
        for (const [i, via] of nodes.entries()) {
          const res = await gateways[i].get(productId);
          t.is(res.status, 200);
          // Dates arrive as JSON strings on both paths: the local call is JSON-copied too.
          t.deepEqual(res.body, {
            productId,
            shard,
            servedBy: owner.instanceId,
            origin: via.instanceId,
            at: '1970-01-01T00:00:00.000Z',
          });
        }
      }
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'an AppError thrown on the owner comes back as the same class, status, code, message and field errors; an unexpected error is a plain 500',
  async (t) => {
    const prefix = uniquePrefix('err');
    const nodes: Cluster[] = [];
    let front: Awaited<ReturnType<typeof gateway>> | undefined;
    try {
      await startServingNodes(prefix, ['a', 'b'], nodes);
      const [caller, owner] = nodes;
      const productId = productIn(owner.ownedShards()[0]);
      t.false(caller.isOwner(productId));

      const conflict = await t.throwsAsync(caller.request(productId, { action: 'conflict' }), {
        instanceOf: ConflictError,
      });
      t.is(conflict.status, 409);
      t.is(conflict.code, 'INSUFFICIENT_STOCK');
      t.is(conflict.message, `Product ${productId} is short`);

      front = await gateway(caller);
      const missing = await front.get(productId, 'missing');
      t.is(missing.status, 404);
      t.like(missing.body, { status: 404, code: 'NOT_FOUND', message: `Product ${productId} not found` });

      const invalid = await front.get(productId, 'invalid');
      t.is(invalid.status, 400);
      t.like(invalid.body, { status: 400, code: 'VALIDATION_ERROR', message: 'Invalid request' });
      t.deepEqual(invalid.body.errors, [{ field: 'quantity', message: 'quantity must be at least 1' }]);

      const crash = await front.get(productId, 'crash');
      t.is(crash.status, 500);
      t.like(crash.body, { status: 500, code: 'INTERNAL_ERROR', message: 'An unexpected error occurred' });
      t.false(crash.text.includes('secret'));
    } finally {
      await front?.close();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'no owner ("no responders") is a 503 SERVICE_UNAVAILABLE with Retry-After within a balancing round, not a hang',
  async (t) => {
    const prefix = uniquePrefix('none');
    // A node that never joined owns nothing, and nobody else serves this prefix.
    const lonely = await startNode(prefix, 'lonely');
    const front = await gateway(lonely);
    try {
      const started = Date.now();
      const res = await front.get(productIn(5));
      // It asks again for one balancing round (0.6 x CLUSTER_RENEW_MS) in case the shard is being handed over.
      const elapsed = Date.now() - started;
      t.true(elapsed >= 600 && elapsed < 2000, `answered in ${elapsed} ms`);
      t.is(res.status, 503);
      t.is(res.headers.get('retry-after'), '4'); // ceil((lease TTL 3 s + renewal 1 s) / 1 s)
      t.like(res.body, {
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
        message: 'No instance serves shard 5 right now; please retry',
      });
    } finally {
      await front.close();
      await cleanup(prefix, [lonely]);
    }
  },
);

natsTest('an owner slower than CLUSTER_REQUEST_TIMEOUT_MS: 503 after the timeout, not a hang', async (t) => {
  const prefix = uniquePrefix('slow');
  const nodes: Cluster[] = [];
  let front: Awaited<ReturnType<typeof gateway>> | undefined;
  try {
    await startServingNodes(prefix, ['a', 'b'], nodes, { CLUSTER_REQUEST_TIMEOUT_MS: '300' });
    const productId = productIn(nodes[1].ownedShards()[0]);
    front = await gateway(nodes[0]);
    const started = Date.now();
    const res = await front.get(productId, 'slow');
    const elapsed = Date.now() - started;
    t.true(elapsed >= 250 && elapsed < 1500, `answered in ${elapsed} ms`);
    t.is(res.status, 503);
    t.is(res.headers.get('retry-after'), '4');
    t.like(res.body, {
      code: 'SERVICE_UNAVAILABLE',
      message: `Shard ${nodes[1].shardOf(productId)} did not answer; please retry`,
    });
  } finally {
    await front?.close();
    await cleanup(prefix, nodes);
  }
});

natsTest('a request reaching an instance that just lost the shard is answered 503, never run', async (t) => {
  const prefix = uniquePrefix('moved');
  const connections: NatsConnection[] = [];
  try {
    for (let i = 0; i < 2; i++) connections.push(await connect({ servers: NATS_URL }));
    let owned = true;
    let ran = 0;
    const common = forwarderSettings(prefix);
    // Still subscribed to shard 3, but its lease is gone (owns() turned false before the subscription closed).
    const former = createForwarder({
      ...common,
      nc: connections[0],
      instanceId: 'former',
      owns: () => owned,
    });
    former.serve(async () => {
      ran++;
      return 'ran';
    });
    await former.open(3);
    const caller = createForwarder({
      ...common,
      nc: connections[1],
      instanceId: 'caller',
      owns: () => false,
    });
    t.is(await caller.request(productIn(3), {}), 'ran');
    owned = false;
    const error = await t.throwsAsync(caller.request(productIn(3), {}), {
      instanceOf: ServiceUnavailableError,
    });
    t.is(error.status, 503);
    t.is(error.message, 'Shard 3 is moving; please retry');
    t.deepEqual(error.details?.headers, { 'Retry-After': '4' });
    t.is(ran, 1);
    await former.close(3);
  } finally {
    await Promise.all(connections.map((nc) => nc.close()));
  }
});

natsTest(
  "a request the server routed to a shard's former owner before its UNSUB arrived is refused as moved and asked again, not dropped",
  async (t) => {
    const prefix = uniquePrefix('drain');
    const nats = new URL(NATS_URL);
    // The former owner reaches NATS through a proxy that holds its UNSUB back (and, as TCP keeps order, what it
    // sends after it): for that long the server still routes the shard's requests to it, while it no longer owns
    // the shard.
    const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
    const connections: NatsConnection[] = [];
    t.teardown(async () => {
      await Promise.all(connections.map((nc) => nc.close()));
      await proxy.close();
    });
    connections.push(await connect({ servers: `nats://127.0.0.1:${proxy.port}` }));
    for (let i = 0; i < 2; i++) connections.push(await connect({ servers: NATS_URL }));
    const common = forwarderSettings(prefix, { requestTimeoutMs: 3000, handoverWaitMs: 1000 });
    const owned = { former: true, next: false };
    const ran = { former: 0, next: 0 };
    const former = createForwarder({
      ...common,
      nc: connections[0],
      instanceId: 'former',
      owns: () => owned.former,
    });
    former.serve(async () => ++ran.former);
    const next = createForwarder({
      ...common,
      nc: connections[1],
      instanceId: 'next',
      owns: () => owned.next,
    });
    next.serve(async () => ++ran.next);
    const caller = createForwarder({
      ...common,
      nc: connections[2],
      instanceId: 'caller',
      owns: () => false,
    });
    await former.open(3);
    t.is(await caller.request(productIn(3), {}), 1);

    const held = proxy.delayOn('UNSUB', { delayMs: 400 });
    owned.former = false;
    const closing = former.close(3);
    // The next owner takes the shard a moment later (its lease was claimed; its subscription opens).
    setTimeout(() => {
      owned.next = true;
      void next.open(3);
    }, 100);
    const started = Date.now();
    t.is(await caller.request(productIn(3), {}), 1, 'run once, by the next owner');
    const took = Date.now() - started;
    t.true(took < 1000, `answered after ${took} ms`);
    t.deepEqual(ran, { former: 1, next: 1 });
    await held;
    await closing;
    await next.close(3);
  },
);

/** An owner and a caller forwarder on their own connections, plus a plain (non-queue) spy on shard 3's subject. */
async function forwarderPair(
  t: ExecutionContext,
  options: { requestTimeoutMs?: number; callerMaxPayload?: number } = {},
) {
  const prefix = uniquePrefix('batch');
  const connections: NatsConnection[] = [];
  for (let i = 0; i < 3; i++) connections.push(await connect({ servers: NATS_URL }));
  t.teardown(() => Promise.all(connections.map((nc) => nc.close())).then(() => undefined));
  const common = forwarderSettings(prefix, { requestTimeoutMs: options.requestTimeoutMs });
  const state = { owned: true };
  const owner = createForwarder({
    ...common,
    nc: connections[0],
    instanceId: 'owner',
    owns: () => state.owned,
  });
  // The caller's view of the server's message limit, made small to split batches (the connection is real).
  const callerNc: NatsConnection = options.callerMaxPayload
    ? Object.create(connections[1], {
        info: { value: { ...connections[1].info!, max_payload: options.callerMaxPayload } },
      })
    : connections[1];
  const caller = createForwarder({ ...common, nc: callerNc, instanceId: 'caller', owns: () => false });
  const messages: Array<{ v: number; origin: string; items: Array<{ productId: number }> }> = [];
  connections[2].subscribe(`${prefix}.shard.3`, {
    callback: (_err, msg) => void messages.push(msg.json()),
  });
  await connections[2].flush();
  await owner.open(3);
  t.teardown(() => owner.close(3));
  return { owner, caller, messages, state, prefix, spy: connections[2] };
}

natsTest(
  'the requests for one shard made in one turn travel as one NATS request; each gets its own answer or error',
  async (t) => {
    const { owner, caller, messages, spy } = await forwarderPair(t);
    const started: number[] = [];
    owner.serve(async ({ productId, payload, origin }) => {
      started.push(productId);
      // Answer a turn later: by then every request of the batch has started (one group commit on an owner).
      await new Promise((resolve) => setImmediate(resolve));
      const { action } = payload as { action: string };
      if (action === 'conflict')
        throw new ConflictError('INSUFFICIENT_STOCK', `Product ${productId} is short`);
      if (action === 'crash') throw new Error('a bug with a secret inside');
      return { productId, origin, startedWith: started.length };
    });
    const ids = [0, 1, 2, 3].map((n) => productIn(3, 64, n + 1));
    const actions = ['read', 'conflict', 'read', 'crash'];
    const results = await Promise.allSettled(ids.map((id, i) => caller.request(id, { action: actions[i] })));
    // The spy's copy travels on its own connection: its PONG comes after every message sent to it before.
    await spy.flush();

    t.is(messages.length, 1, 'one NATS request for the four');
    t.deepEqual(
      messages[0].items.map((item) => item.productId),
      ids,
    );
    t.like(messages[0], { v: 2, origin: 'caller' });
    t.deepEqual(started, ids, 'the owner started all four before answering any');
    t.deepEqual(results[0], {
      status: 'fulfilled',
      value: { productId: ids[0], origin: 'caller', startedWith: 4 },
    });
    t.deepEqual(results[2], {
      status: 'fulfilled',
      value: { productId: ids[2], origin: 'caller', startedWith: 4 },
    });
    t.is(results[1].status, 'rejected');
    const refused = (results[1] as PromiseRejectedResult).reason as ConflictError;
    t.true(refused instanceof ConflictError);
    t.is(refused.status, 409);
    t.is(refused.code, 'INSUFFICIENT_STOCK');
    t.is(refused.message, `Product ${ids[1]} is short`);
    const crashed = (results[3] as PromiseRejectedResult).reason as Error;
    t.false(crashed instanceof AppError, 'an unexpected error stays a plain error (a 500)');
    t.is(crashed.message, 'The owner of shard 3 failed: An unexpected error occurred');

    // A later turn is a new batch; requests for other shards travel in their own.
    t.like(await caller.request(ids[0], { action: 'read' }), { productId: ids[0], startedWith: 5 });
    await spy.flush();
    t.is(messages.length, 2);
  },
);

natsTest(
  'a batch caught in a shard move: each request gets its 503 with Retry-After and none runs; an owner that does not answer: each gets OwnerDidNotAnswerError',
  async (t) => {
    const { owner, caller, messages, state, spy } = await forwarderPair(t, { requestTimeoutMs: 300 });
    let ran = 0;
    let slow = false;
    owner.serve(async ({ productId }) => {
      ran++;
      if (slow) await new Promise((resolve) => setTimeout(resolve, 1_000));
      return productId;
    });
    const ids = [1, 2, 3].map((n) => productIn(3, 64, n));

    state.owned = false;
    const moved = await Promise.allSettled(ids.map((id) => caller.request(id, {})));
    await spy.flush();
    // One message, asked again while a new owner may come (the handover wait), all refused as moved.
    t.true(messages.length >= 1);
    t.true(messages.every((message) => message.items.length === 3));
    t.is(ran, 0);
    const asked = messages.length;
    for (const result of moved) {
      t.is(result.status, 'rejected');
      const error = (result as PromiseRejectedResult).reason as ServiceUnavailableError;
      t.true(error instanceof ServiceUnavailableError);
      t.false(error instanceof OwnerDidNotAnswerError);
      t.is(error.status, 503);
      t.is(error.message, 'Shard 3 is moving; please retry');
      t.deepEqual(error.details?.headers, { 'Retry-After': '4' });
    }

    state.owned = true;
    slow = true;
    const started = Date.now();
    const silent = await Promise.allSettled(ids.map((id) => caller.request(id, {})));
    const elapsed = Date.now() - started;
    t.true(elapsed >= 250 && elapsed < 900, `answered in ${elapsed} ms`);
    await spy.flush();
    t.is(messages.length, asked + 1);
    t.is(ran, 3, 'the owner got all three (they may have run)');
    for (const result of silent) {
      t.is(result.status, 'rejected');
      const error = (result as PromiseRejectedResult).reason as OwnerDidNotAnswerError;
      t.true(error instanceof OwnerDidNotAnswerError);
      t.is(error.status, 503);
      t.is(error.message, 'Shard 3 did not answer; please retry');
      t.deepEqual(error.details?.headers, { 'Retry-After': '4' });
    }
    // Distinct errors: one request's handling cannot change another's answer.
    const reasons = silent.map((result) => (result as PromiseRejectedResult).reason as Error);
    t.is(new Set(reasons).size, 3);
  },
);

natsTest(
  'events reach every node with their origin, the publisher itself included (marked own)',
  async (t) => {
    const prefix = uniquePrefix('events');
    const nodes: Cluster[] = [];
    try {
      for (const id of ['a', 'b']) nodes.push(await startNode(prefix, `node-${id}`));
      const seen: Record<string, Array<{ payload: unknown; origin: string; own: boolean }>> = {
        'node-a': [],
        'node-b': [],
      };
      const unsubscribe = await Promise.all(
        nodes.map((node) =>
          node.subscribe<{ id: number }>('productChanged', ({ payload, origin, own, name, at }) => {
            t.is(name, 'productChanged');
            t.regex(at, /^\d{4}-\d{2}-\d{2}T/);
            seen[node.instanceId].push({ payload, origin, own });
          }),
        ),
      );
      const other: unknown[] = [];
      await nodes[1].subscribe('categoryChanged', ({ payload }) => void other.push(payload));
      nodes[0].publish('productChanged', { id: 42 });
      nodes[1].publish('productChanged', { id: 43 });
      nodes[0].publish('categoryChanged', { id: 7 });
      await until(
        () => seen['node-a'].length === 2 && seen['node-b'].length === 2 && other.length === 1,
        3000,
        () => JSON.stringify(seen),
      );
      // Two publishers: NATS orders each one's messages, not the two together.
      const byId = (list: Array<{ payload: unknown }>) =>
        [...list].sort((x, y) => (x.payload as { id: number }).id - (y.payload as { id: number }).id);
      t.deepEqual(byId(seen['node-a']), [
        { payload: { id: 42 }, origin: 'node-a', own: true },
        { payload: { id: 43 }, origin: 'node-b', own: false },
      ]);
      t.deepEqual(byId(seen['node-b']), [
        { payload: { id: 42 }, origin: 'node-a', own: false },
        { payload: { id: 43 }, origin: 'node-b', own: true },
      ]);
      t.deepEqual(other, [{ id: 7 }]);
      unsubscribe[0]();
      nodes[1].publish('productChanged', { id: 44 });
      await until(
        () => seen['node-b'].length === 3,
        3000,
        () => JSON.stringify(seen),
      );
      t.is(seen['node-a'].length, 2, 'no event after unsubscribing');
      t.throws(() => nodes[0].publish('bad.name', {}), { instanceOf: TypeError });
    } finally {
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'an envelope of another version (a cluster mid-upgrade) is answered 503 with Retry-After for the whole batch, nothing run',
  async (t) => {
    const { owner, prefix, spy } = await forwarderPair(t);
    let ran = 0;
    owner.serve(async () => {
      ran++;
      return 'ran';
    });
    // The previous release's envelope: one request per message.
    const v1 = { v: 1, productId: productIn(3), payload: { action: 'read' }, origin: 'older' };
    const msg = await spy.request(`${prefix}.shard.3`, JSON.stringify(v1), { timeout: 2000 });
    t.deepEqual(msg.json(), {
      v: 2,
      ok: false,
      error: {
        status: 503,
        code: 'SERVICE_UNAVAILABLE',
        message: "Shard 3's owner runs another version (envelope 1); please retry",
        headers: { 'Retry-After': '4' },
      },
    });
    t.is(ran, 0);
  },
);

natsTest(
  "a turn's requests over the server's message limit travel in several batches, each under it; every request is answered",
  async (t) => {
    // Limit 3,072 bytes: the forwarder keeps 1,024 for the envelope, so about 2,048 of items per message.
    const { owner, caller, messages, spy } = await forwarderPair(t, { callerMaxPayload: 3072 });
    owner.serve(async ({ productId }) => ({ productId }));
    const padding = 'x'.repeat(600);
    const ids = [1, 2, 3, 4, 5, 6, 7].map((n) => productIn(3, 64, n));
    const results = await Promise.all(ids.map((id) => caller.request(id, { padding })));
    await spy.flush();

    t.deepEqual(
      results,
      ids.map((productId) => ({ productId })),
    );
    t.true(messages.length > 1, `split into ${messages.length} message(s)`);
    t.deepEqual(
      messages.flatMap((message) => message.items.map((item) => item.productId)),
      ids,
      'every request travelled once, in order',
    );
    for (const message of messages) t.true(JSON.stringify(message).length <= 3072 - 1024 + 200);
  },
);

natsTest(
  "a turn's requests whose answers could exceed the server's message limit travel in several batches",
  async (t) => {
    // The owner answers one message in one reply: 7 answers of up to 700 bytes each do not fit in 2,048.
    const { owner, caller, messages, spy } = await forwarderPair(t, { callerMaxPayload: 3072 });
    owner.serve(async ({ productId }) => ({ productId, name: 'y'.repeat(600) }));
    const ids = [1, 2, 3, 4, 5, 6, 7].map((n) => productIn(3, 64, n));
    const results = await Promise.all(ids.map((id) => caller.request(id, {}, { replyBytes: 700 })));
    await spy.flush();
    t.deepEqual(
      results,
      ids.map((productId) => ({ productId, name: 'y'.repeat(600) })),
    );
    t.deepEqual(
      messages.map((message) => message.items.length),
      [2, 2, 2, 1],
      'at most 2 x 700 bytes of answers per message',
    );
    t.deepEqual(
      messages.flatMap((message) => message.items.map((item) => item.productId)),
      ids,
    );
  },
);

natsTest(
  'a database that is down or too slow on the owner is a 503 with Retry-After on the caller too, not a 500',
  async (t) => {
    const { owner, caller } = await forwarderPair(t);
    owner.serve(async () => {
      // What mysql2 reports for MariaDB's max_statement_time, as a knex query throws it.
      throw Object.assign(new Error('Query execution was interrupted (max_statement_time exceeded)'), {
        errno: 1969,
        sqlMessage: 'Query execution was interrupted (max_statement_time exceeded)',
      });
    });
    const error = await t.throwsAsync(caller.request(productIn(3, 64, 1), {}));
    t.true(error instanceof ServiceUnavailableError);
    t.like(error, { status: 503, code: 'SERVICE_UNAVAILABLE' });
    t.deepEqual((error as ServiceUnavailableError).details?.headers, { 'Retry-After': '5' });
  },
);

/**
 * Forwarders on their own connections for the per-owner tests: a caller whose owner map says `map`, and the
 * instances named in `owners`, each owning the shards listed (and subscribed to them) and listening on its own
 * subject; a spy records every message on those owners' and on the shards' subjects.
 */
async function ownerWorld(
  t: ExecutionContext,
  owners: Record<string, number[]>,
  map: Record<number, string>,
  options: { requestTimeoutMs?: number } = {},
) {
  const prefix = uniquePrefix('owner');
  const connections: NatsConnection[] = [];
  const connection = async () => {
    const nc = await connect({ servers: NATS_URL });
    connections.push(nc);
    return nc;
  };
  t.teardown(() => Promise.all(connections.map((nc) => nc.close())).then(() => undefined));
  const common = forwarderSettings(prefix, { requestTimeoutMs: options.requestTimeoutMs });
  const spy = await connection();
  const messages: Array<{ subject: string; v: number; items: Array<{ productId: number; shard?: number }> }> =
    [];
  // Only the subjects somebody answers: a spy on a gone owner's subject would turn "no responders" into a timeout.
  for (const subject of ['shard.*', ...Object.keys(owners).map((name) => `owner.${name}`)]) {
    spy.subscribe(`${prefix}.${subject}`, {
      callback: (_err, msg) =>
        void messages.push({
          ...msg.json<Omit<(typeof messages)[number], 'subject'>>(),
          subject: msg.subject.slice(prefix.length + 1),
        }),
    });
  }
  await spy.flush();
  const ran: Record<string, number[]> = {};
  const owned: Record<string, Set<number>> = {};
  for (const [name, shards] of Object.entries(owners)) {
    ran[name] = [];
    owned[name] = new Set(shards);
    const forwarder = createForwarder({
      ...common,
      nc: await connection(),
      instanceId: name,
      owns: (shard) => owned[name].has(shard),
    });
    forwarder.serve(async ({ productId, shard, origin, payload }) => {
      ran[name].push(productId);
      const started = ran[name].length;
      // Answer a turn later: by then every item of the message has started (one group commit on an owner).
      await new Promise((resolve) => setImmediate(resolve));
      if ((payload as { slow?: boolean }).slow) await new Promise((resolve) => setTimeout(resolve, 1_000));
      return { productId, shard, servedBy: name, origin, started, startedBy: ran[name].length };
    });
    await forwarder.listen();
    for (const shard of shards) await forwarder.open(shard);
    t.teardown(() => Promise.all(shards.map((shard) => forwarder.close(shard))).then(() => undefined));
  }
  const gone: string[] = [];
  const caller = createForwarder({
    ...common,
    nc: await connection(),
    instanceId: 'caller',
    owns: () => false,
    ownerOf: (shard) => map[shard] ?? null,
    ownerGone: (name) => void gone.push(name),
  });
  return { caller, messages, ran, owned, gone, spy };
}

natsTest(
  'the requests for several shards of one owner made in one turn travel as ONE message on its subject; it starts them all in that turn',
  async (t) => {
    const { caller, messages, ran, spy } = await ownerWorld(
      t,
      { b: [3, 5, 7], c: [9] },
      { 3: 'b', 5: 'b', 7: 'b', 9: 'c' },
    );
    const ids = [productIn(3), productIn(5), productIn(7, 64, 2), productIn(3, 64, 3), productIn(9)];
    const results = await Promise.all(ids.map((id) => caller.request(id, {})));
    await spy.flush(); // the spy's copies come before its PONG

    t.deepEqual(
      messages.map((message) => message.subject).sort(),
      ['owner.b', 'owner.c'],
      'one message per owner, none on the shards',
    );
    const toB = messages.find((message) => message.subject === 'owner.b')!;
    t.is(toB.v, 3);
    t.deepEqual(
      toB.items.map(({ shard, productId }) => ({ shard, productId })),
      [
        { shard: 3, productId: ids[0] },
        { shard: 5, productId: ids[1] },
        { shard: 7, productId: ids[2] },
        { shard: 3, productId: ids[3] },
      ],
    );
    t.deepEqual(ran, { b: [ids[0], ids[1], ids[2], ids[3]], c: [ids[4]] });
    t.deepEqual(
      results,
      ids.map((productId, i) => ({
        productId,
        shard: productId % 64,
        servedBy: i === 4 ? 'c' : 'b',
        origin: 'caller',
        started: i === 4 ? 1 : i + 1,
        // Every item of b's message had started before the first one answered.
        startedBy: i === 4 ? 1 : 4,
      })),
    );
  },
);

natsTest(
  'a stale owner map: the instance refuses (runs nothing for) the shard it no longer owns, and the request runs once on its real owner through the shard subject; no owner at all is a 503 with Retry-After',
  async (t) => {
    // The map still says b owns shard 3, but c took it over; b still owns 5.
    const { caller, messages, ran, owned, spy } = await ownerWorld(t, { b: [5], c: [3] }, { 3: 'b', 5: 'b' });
    const [moved, kept] = await Promise.all([
      caller.request(productIn(3), {}),
      caller.request(productIn(5), {}),
    ]);
    await spy.flush();
    t.like(moved, { productId: productIn(3), servedBy: 'c', origin: 'caller' });
    t.like(kept, { productId: productIn(5), servedBy: 'b', origin: 'caller' });
    t.deepEqual(ran, { b: [productIn(5)], c: [productIn(3)] }, 'each ran once, where its shard is owned');
    t.deepEqual(
      messages.map((message) => [message.subject, message.items.map((item) => item.productId)]),
      [
        ['owner.b', [productIn(3), productIn(5)]],
        ['shard.3', [productIn(3)]],
      ],
    );

    // Now c is losing shard 3 as well (still subscribed, its lease gone): a 503 per request, nothing run.
    owned.c.delete(3);
    const error = await t.throwsAsync(caller.request(productIn(3, 64, 2), {}), {
      instanceOf: ServiceUnavailableError,
    });
    t.false(error instanceof OwnerDidNotAnswerError);
    t.is(error.status, 503);
    t.is(error.message, 'Shard 3 is moving; please retry');
    t.deepEqual(error.details?.headers, { 'Retry-After': '4' });
    t.deepEqual(ran, { b: [productIn(5)], c: [productIn(3)] });
  },
);

natsTest(
  'an owner that is gone (nobody on its subject): its shards go on their subjects to whoever owns them now; an owner that does not answer in time: OwnerDidNotAnswerError per request',
  async (t) => {
    const { caller, messages, ran, gone, spy } = await ownerWorld(
      t,
      { b: [3], c: [5, 7] },
      { 3: 'ghost', 5: 'ghost', 7: 'c' },
      { requestTimeoutMs: 300 },
    );
    const results = await Promise.all([caller.request(productIn(3), {}), caller.request(productIn(5), {})]);
    await spy.flush();
    t.like(results[0], { servedBy: 'b' });
    t.like(results[1], { servedBy: 'c' });
    t.deepEqual(gone, ['ghost'], 'the caller is told, so its map forgets that instance');
    t.deepEqual(ran, { b: [productIn(3)], c: [productIn(5)] });
    t.deepEqual(
      messages.map((message) => message.subject),
      ['shard.3', 'shard.5'],
    );

    // c has the message but answers too late: each request may have run, so none is sent again.
    const started = Date.now();
    const silent = await Promise.allSettled([
      caller.request(productIn(7), { slow: true }),
      caller.request(productIn(7, 64, 2), { slow: true }),
    ]);
    const elapsed = Date.now() - started;
    t.true(elapsed >= 250 && elapsed < 900, `answered in ${elapsed} ms`);
    for (const result of silent) {
      t.is(result.status, 'rejected');
      const error = (result as PromiseRejectedResult).reason as OwnerDidNotAnswerError;
      t.true(error instanceof OwnerDidNotAnswerError);
      t.is(error.message, 'Shard 7 did not answer; please retry');
      t.deepEqual(error.details?.headers, { 'Retry-After': '4' });
    }
    await spy.flush();
    t.deepEqual(
      messages.slice(2).map((message) => message.subject),
      ['owner.c'],
    );
  },
);

natsTest(
  "every node learns each shard's owner from the shards bucket; a node's requests for several shards of another go as one message on that node's subject",
  async (t) => {
    const prefix = uniquePrefix('ownermap');
    const nodes: Cluster[] = [];
    const spy = await connect({ servers: NATS_URL });
    try {
      await startServingNodes(prefix, ['a', 'b'], nodes);
      const [caller, owner] = nodes;
      // The watch delivers claims and renewals: within a renewal period every shard's owner is known.
      await until(
        () => nodes.every((node) => [...Array(64).keys()].every((shard) => node.ownerOf(shard) !== null)),
        3000,
        () => `${caller.instanceId} knows ${[...Array(64).keys()].filter((s) => caller.ownerOf(s)).length}`,
      );
      for (const shard of [...Array(64).keys()]) {
        const expected = nodes.find((node) => node.ownedShards().includes(shard))!.instanceId;
        t.is(caller.ownerOf(shard), expected);
        t.is(owner.ownerOf(shard), expected);
      }
      const subjects: string[] = [];
      spy.subscribe(`${prefix}.>`, {
        callback: (_err, msg) => void subjects.push(msg.subject.slice(prefix.length + 1)),
      });
      await spy.flush();
      const shards = owner.ownedShards().slice(0, 3);
      const results = await Promise.all(shards.map((shard) => caller.request(productIn(shard), {})));
      await spy.flush();
      t.deepEqual(
        results,
        shards.map((shard) => ({
          productId: productIn(shard),
          shard,
          servedBy: owner.instanceId,
          origin: caller.instanceId,
          at: '1970-01-01T00:00:00.000Z',
        })),
      );
      // One message, on the owner process's own subject: its instance id and the incarnation its leases carry.
      const sent = subjects.filter((subject) => !subject.startsWith('events.'));
      t.is(sent.length, 1, sent.join(', '));
      t.regex(sent[0], new RegExp(`^owner\\.${owner.instanceId}\\.[0-9a-f-]{36}$`));
    } finally {
      await spy.close();
      await cleanup(prefix, nodes);
    }
  },
);

natsTest(
  'a shard released while one of its requests runs in place on its owner keeps its key until that request is answered',
  async (t) => {
    const prefix = uniquePrefix('inplace');
    const nodes: Cluster[] = [];
    const nc = await connect({ servers: NATS_URL });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    try {
      const node = await startNode(prefix, 'node-a');
      nodes.push(node);
      node.serve(async ({ productId, origin }) => {
        await gate;
        return { productId, origin };
      });
      await node.start();
      await until(
        () => exactlyOnce(nodes, 64, 64),
        10_000,
        () => shareReport(nodes),
      );
      const productId = productIn(5);
      // The owner's own request runs in place (no NATS hop) and is held.
      const inPlace = node.request(productId, {});
      let closed = false;
      const closing = node.close().then(() => (closed = true));
      const jsm = await jetstreamManager(nc);
      const shardsBucket = bucketNames(prefix).shards;
      await until(
        async () => !(await liveKeys(jsm, shardsBucket)).includes('shard-6'),
        5000,
        () => 'the other shards were not released',
      );
      t.true((await liveKeys(jsm, shardsBucket)).includes('shard-5'), 'its shard is kept while it runs');
      t.false(closed);
      open();
      t.deepEqual(await inPlace, { productId, origin: node.instanceId });
      await closing;
      t.false((await liveKeys(jsm, shardsBucket)).includes('shard-5'), 'released once it was answered');
    } finally {
      open();
      await nc.close();
      await cleanup(prefix, nodes);
    }
  },
);
