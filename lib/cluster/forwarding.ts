// Forwarding to a shard's owner. Each instance answers two kinds of subject:
//  - `<prefix>.shard.<n>` for every shard it owns (queue group, so a request is answered once even while an
//    old and a new owner briefly overlap): envelope v2, the requests for that one shard;
//  - `<prefix>.owner.<address>`, its own, from the start (the address is the instance id and this process's
//    incarnation: a replacement started under a stalled process's id has a subject of its own, so no message
//    reaches both and runs twice): envelope v3, requests for any of its shards, each
//    item naming its shard. A caller learns who owns which shard from the shards bucket (owner-map.ts, a KV
//    watch) and sends there what it forwards to several shards of one owner: ONE message per owner per turn.
// A caller that owns the shard itself runs the handler in place. The requests a caller forwards within one
// event-loop turn go out together: per owner when the owner map knows a live owner other than this instance,
// else per shard. The owner starts every item it runs in the same turn (its group commit takes them together)
// and answers each in one reply, in order. The owner map may be stale: the owner refuses (runs nothing for)
// an item of a shard it does not own, marked `moved`, and a whole message nobody answers ("no responders": the
// instance is gone) ran nowhere; the caller sends those items again on their shard's subject, where today's
// rules apply, so no request is lost or run twice. On a shard's subject, an instance that just lost the shard
// refuses the request as `moved` too (its subscription drains, so a request routed to it before the server
// learned of its UNSUB is answered, not dropped), and the caller asks again, as it does when no one answers,
// for up to a balancing round. JSON envelopes both ways; an AppError travels as status/code/message and is
// rebuilt as the same class, per request. Whatever keeps a request from its owner beyond that (no owner, a
// timeout, a shard still moving) is a 503 SERVICE_UNAVAILABLE with Retry-After, never a hang and never a 500; a
// timeout (the owner got it, it may have run) is an OwnerDidNotAnswerError.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { toClientError } from '../db-errors';
import { AppError, ServiceUnavailableError } from '../errors';
import type { Logger } from '../logger';
import { fromWireError, toWireError, type WireError } from './wire-errors';

export interface ShardRequest<P = unknown> {
  productId: number;
  shard: number;
  payload: P;
  /** The instance the request came from (this one when it ran in place). */
  origin: string;
}

export type ShardHandler = (request: ShardRequest) => Promise<unknown>;

/** One NATS request on a shard's subject: every request a caller forwarded to that shard in one turn. */
interface BatchEnvelope {
  v: 2;
  origin: string;
  items: Array<{ productId: number; payload: unknown }>;
}

/** One NATS request on an owner's subject: the requests a caller forwarded to its shards in one turn. */
interface OwnerEnvelope {
  v: 3;
  origin: string;
  items: Array<{ shard: number; productId: number; payload: unknown }>;
}

/** `moved`: refused before running, the shard is not the answering instance's (only on an owner's subject). */
type ItemReply = { ok: true; value: unknown } | { ok: false; error: WireError; moved?: true };

/**
 * Either one answer per item, in the batch's order, or one error for the whole batch (nothing ran); `moved`: the
 * answering instance does not own the shard (any more), so another may.
 */
type BatchReply<V extends 2 | 3 = 2> =
  { v: V; ok: true; items: ItemReply[] } | { v: V; ok: false; error: WireError; moved?: true };

/** A forwarded request waiting for its batch to go out (or for its answer). */
interface Queued {
  shard: number;
  productId: number;
  payload: unknown;
  /** The item's JSON in the batch envelope. */
  json: string;
  /** The most bytes its answer can take in the reply (0: unknown). */
  replyBytes: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const HANDOVER_POLL_MS = 50;

/** A 503 for a request that reached an owner (or was in flight to one) but got no answer: it may have run. */
export class OwnerDidNotAnswerError extends ServiceUnavailableError {}

export interface ForwarderDeps {
  nc: NatsConnection;
  prefix: string;
  instanceId: string;
  /** The token of this process's own subject (owner-map.ts's processAddress); the instance id by default. */
  address?: string;
  requestTimeoutMs: number;
  /** How long a request for an unowned shard keeps asking before its 503 (about one balancing round). */
  handoverWaitMs: number;
  /** Retry-After of a 503: about the time a shard takes to find a new owner. */
  retryAfterSeconds: number;
  shardOf(productId: number): number;
  owns(shard: number): boolean;
  /** While NATS is away a request would only wait for its timeout: refuse it at once. */
  connected(): boolean;
  /** The owner map's hint: the owner's address (owner-map.ts); without it every request goes on its shard's subject. */
  ownerOf?(shard: number): string | null;
  /** Told when an owner's subject had no responders (the process is gone). */
  ownerGone?(address: string): void;
  logger: Logger;
}

export function createForwarder(deps: ForwarderDeps) {
  const { nc, instanceId } = deps;
  const address = deps.address ?? instanceId;
  const log = deps.logger.child({ component: 'ClusterForwarder' });
  const subscriptions = new Map<number, Subscription>();
  let ownSubscription: Subscription | null = null;
  /** Answers being worked out, per shard. */
  const inFlight = new Map<number, Set<Promise<void>>>();
  let handler: ShardHandler | null = null;

  const subject = (shard: number) => `${deps.prefix}.shard.${shard}`;
  const ownerSubject = (owner: string) => `${deps.prefix}.owner.${owner}`;
  const unavailable = (why: string) =>
    new ServiceUnavailableError(`${why}; please retry`, deps.retryAfterSeconds);

  // Results are JSON-copied in place too, so a caller sees the same shape wherever the owner is.
  const jsonCopy = (value: unknown): unknown =>
    value === undefined ? null : JSON.parse(JSON.stringify(value));

  const internal: WireError = {
    status: 500,
    code: 'INTERNAL_ERROR',
    message: 'An unexpected error occurred',
  };

  function wireOf(err: unknown, shard: number): WireError {
    // Judged as in one process: a database that is down or timed out is a 503 with Retry-After (db-errors.ts).
    const client = toClientError(err);
    if (client instanceof AppError) return toWireError(client);
    log.error({ err }, `Request for shard ${shard} failed`);
    return internal;
  }

  async function runItem(
    run: ShardHandler,
    shard: number,
    item: BatchEnvelope['items'][number],
    origin: string,
  ): Promise<ItemReply> {
    try {
      const value = await run({ productId: item.productId, shard, payload: item.payload, origin });
      return { ok: true, value: value === undefined ? null : value };
    } catch (err) {
      return { ok: false, error: wireOf(err, shard) };
    }
  }

  async function answer(shard: number, msg: Msg): Promise<void> {
    let reply: BatchReply;
    try {
      if (!deps.owns(shard) || !handler) {
        // Lost or released while the request was on its way (the subscription drains): nothing runs.
        const moving = toWireError(unavailable(`Shard ${shard} is moving`));
        if (
          !msg.respond(JSON.stringify({ v: 2, ok: false, moved: true, error: moving } satisfies BatchReply))
        )
          log.warn(`Request for shard ${shard} had no reply subject`);
        return;
      }
      const run = handler;
      const request = msg.json<BatchEnvelope>();
      if (request.v !== 2 || !Array.isArray(request.items)) {
        // An instance of another version (a cluster mid-upgrade): nothing ran, so the caller may retry safely.
        throw unavailable(`Shard ${shard}'s owner runs another version (envelope ${String(request.v)})`);
      }
      // Every item starts in this turn (runItem calls the handler before its first await): one group commit.
      const items = await Promise.all(request.items.map((item) => runItem(run, shard, item, request.origin)));
      reply = { v: 2, ok: true, items };
    } catch (err) {
      reply = { v: 2, ok: false, error: wireOf(err, shard) };
    }
    if (!msg.respond(JSON.stringify(reply))) log.warn(`Request for shard ${shard} had no reply subject`);
  }

  /** Tracks an answer under each shard it runs for, so closing a shard waits until that answer went out. */
  function track(shards: Iterable<number>, work: Promise<void>): void {
    for (const shard of new Set(shards)) {
      const pending = inFlight.get(shard) ?? new Set<Promise<void>>();
      inFlight.set(shard, pending);
      pending.add(work);
      void work.finally(() => pending.delete(work));
    }
  }

  /**
   * Answers a message on this instance's own subject. Synchronous up to the replies: the ownership check of
   * every item and the start of every item it runs happen in this turn (one group commit), so an item is
   * either refused (`moved`, nothing ran) or run by the owner of its shard at that moment, never both.
   */
  function answerOwner(msg: Msg): void {
    const refuse = (error: WireError) => {
      const reply: BatchReply<3> = { v: 3, ok: false, error };
      if (!msg.respond(JSON.stringify(reply))) log.warn('A request to this instance had no reply subject');
    };
    let request: OwnerEnvelope;
    try {
      request = msg.json<OwnerEnvelope>();
    } catch (err) {
      log.error({ err }, 'A request to this instance was not JSON');
      refuse(internal);
      return;
    }
    const run = handler;
    if (request.v !== 3 || !Array.isArray(request.items) || !run) {
      refuse(
        toWireError(
          run
            ? unavailable(`This instance runs another version (envelope ${String(request.v)})`)
            : unavailable('This instance is not serving yet'),
        ),
      );
      return;
    }
    const ran: number[] = [];
    const replies = request.items.map((item): ItemReply | Promise<ItemReply> => {
      if (!deps.owns(item.shard)) {
        return { ok: false, moved: true, error: toWireError(unavailable(`Shard ${item.shard} is moving`)) };
      }
      ran.push(item.shard);
      return runItem(run, item.shard, item, request.origin);
    });
    const work = Promise.all(replies).then((items) => {
      const reply: BatchReply<3> = { v: 3, ok: true, items };
      if (!msg.respond(JSON.stringify(reply))) log.warn('A request to this instance had no reply subject');
    });
    track(
      ran,
      work.catch((err: unknown) => log.error({ err }, 'Answering a request to this instance failed')),
    );
  }

  /** The error a wire error stands for on the caller: an owner's unexpected failure stays a plain Error (500). */
  function errorOf(shard: number, wire: WireError): Error {
    if (wire.status >= 500 && wire.code === 'INTERNAL_ERROR') {
      return new Error(`The owner of shard ${shard} failed: ${wire.message}`);
    }
    return fromWireError(wire);
  }

  /** Runs a request of a shard this instance owns; tracked like a forwarded one, so close(shard) waits for it. */
  async function runInPlace(shard: number, productId: number, payload: unknown): Promise<unknown> {
    if (!handler) throw unavailable('This instance is not serving yet');
    const work = handler({ productId, shard, payload, origin: instanceId });
    track(
      [shard],
      work.then(
        () => undefined,
        () => undefined,
      ),
    );
    return jsonCopy(await work);
  }

  /** Sends one batch on its shard's subject and settles each of its requests; never throws. */
  async function sendToShard(shard: number, batch: Queued[]): Promise<void> {
    const body = `{"v":2,"origin":${JSON.stringify(instanceId)},"items":[${batch.map((item) => item.json).join(',')}]}`;
    let reply: BatchReply;
    // A shard handed over on a join or a graceful leave is unowned for at most a balancing round: ask again
    // for that long before answering 503 (an owner that died leaves it unowned for the lease TTL).
    // An instance that just lost the shard refuses it as `moved` (nothing ran): asked again the same way.
    const handoverDeadline = Date.now() + deps.handoverWaitMs;
    /** Waits a moment for the shard's next owner: true when that is this instance (the batch then ran here). */
    const awaitNextOwner = async (): Promise<boolean> => {
      await new Promise((resolve) => setTimeout(resolve, HANDOVER_POLL_MS));
      if (!deps.owns(shard) || !handler) return false;
      for (const item of batch)
        runInPlace(shard, item.productId, item.payload).then(item.resolve, item.reject);
      return true;
    };
    for (;;) {
      try {
        const msg = await nc.request(subject(shard), body, { timeout: deps.requestTimeoutMs });
        reply = msg.json<BatchReply>();
        if (!reply.ok && reply.moved && Date.now() < handoverDeadline) {
          if (await awaitNextOwner()) return;
          continue;
        }
        break;
      } catch (err) {
        const why = (err as Error).message ?? String(err);
        const noOwner = /no responders/i.test(why);
        if (noOwner && Date.now() < handoverDeadline) {
          if (await awaitNextOwner()) return;
          continue;
        }
        const products = batch.map((item) => item.productId).join(', ');
        log.warn(`Request to shard ${shard} (product(s) ${products}) failed: ${why}`);
        for (const item of batch) {
          item.reject(
            noOwner
              ? unavailable(`No instance serves shard ${shard} right now`)
              : // The owner got it (or died holding it): each request may have run.
                new OwnerDidNotAnswerError(
                  `Shard ${shard} did not answer; please retry`,
                  deps.retryAfterSeconds,
                ),
          );
        }
        return;
      }
    }
    if (!reply.ok) {
      for (const item of batch) item.reject(errorOf(shard, reply.error));
      return;
    }
    if (!Array.isArray(reply.items) || reply.items.length !== batch.length) {
      for (const item of batch)
        item.reject(new Error(`The owner of shard ${shard} answered a malformed batch`));
      return;
    }
    batch.forEach((item, i) => {
      const answered = reply.items[i];
      if (answered.ok) item.resolve(answered.value);
      else item.reject(errorOf(shard, answered.error));
    });
  }

  /**
   * Sends `items` in messages under the server's limit, both ways: the requests' JSON, and the most their answers
   * can take (`replyBytes`), since the owner answers one message in one reply (a lone item over it fails as it
   * always did).
   */
  function split(items: Queued[], json: (item: Queued) => string, send: (batch: Queued[]) => void): void {
    const limit = Math.max(1024, (nc.info?.max_payload ?? 1024 * 1024) - 1024);
    let batch: Queued[] = [];
    let size = 0;
    let replySize = 0;
    for (const item of items) {
      const bytes = Buffer.byteLength(json(item)) + 1;
      if (batch.length > 0 && (size + bytes > limit || replySize + item.replyBytes > limit)) {
        send(batch);
        batch = [];
        size = 0;
        replySize = 0;
      }
      batch.push(item);
      size += bytes;
      replySize += item.replyBytes;
    }
    send(batch);
  }

  /** Sends items per shard, each shard's in its own message(s). */
  function sendPerShard(items: Queued[]): void {
    const byShard = new Map<number, Queued[]>();
    for (const item of items) {
      const list = byShard.get(item.shard);
      if (list) list.push(item);
      else byShard.set(item.shard, [item]);
    }
    for (const [shard, list] of byShard)
      split(
        list,
        (item) => item.json,
        (batch) => settleAll(batch, sendToShard(shard, batch)),
      );
  }

  /**
   * A sender's last resort: what it throws (an answer of an unexpected shape, from another version) fails its
   * batch's requests still unsettled, never the process (a rejected promise nobody handles ends it).
   */
  function settleAll(batch: Queued[], sending: Promise<void>): void {
    sending.catch((err: unknown) => {
      log.error({ err }, 'A forwarded batch failed on an unexpected answer');
      // An answer came back, so the owner may have run them: a retry with the same Idempotency-Key is exact.
      for (const item of batch)
        item.reject(
          new OwnerDidNotAnswerError(
            `Shard ${item.shard} answered in a form this instance does not read; please retry`,
            deps.retryAfterSeconds,
          ),
        );
    });
  }

  const ownerJson = (item: Queued) => `{"shard":${item.shard},${item.json.slice(1)}`;

  /**
   * Sends one batch on an owner's subject and settles each of its requests; never throws. What ran nowhere
   * (refused as `moved`, or nobody answers the subject) goes again on its shard's subject.
   */
  async function sendToOwner(owner: string, batch: Queued[]): Promise<void> {
    const body = `{"v":3,"origin":${JSON.stringify(instanceId)},"items":[${batch.map(ownerJson).join(',')}]}`;
    let reply: BatchReply<3>;
    try {
      const msg = await nc.request(ownerSubject(owner), body, { timeout: deps.requestTimeoutMs });
      reply = msg.json<BatchReply<3>>();
    } catch (err) {
      const why = (err as Error).message ?? String(err);
      if (/no responders/i.test(why)) {
        // Nobody received it: the instance is gone (or not yet listening). Its shards go per shard.
        deps.ownerGone?.(owner);
        sendPerShard(batch);
        return;
      }
      const products = batch.map((item) => item.productId).join(', ');
      log.warn(`Request to instance ${owner} (product(s) ${products}) failed: ${why}`);
      for (const item of batch) {
        // The owner got it (or died holding it): each request may have run.
        item.reject(
          new OwnerDidNotAnswerError(
            `Shard ${item.shard} did not answer; please retry`,
            deps.retryAfterSeconds,
          ),
        );
      }
      return;
    }
    if (!reply.ok) {
      // Refused as a whole before anything ran (not serving yet, another version): per shard instead.
      sendPerShard(batch);
      return;
    }
    if (!Array.isArray(reply.items) || reply.items.length !== batch.length) {
      for (const item of batch) item.reject(new Error(`Instance ${owner} answered a malformed batch`));
      return;
    }
    const moved: Queued[] = [];
    batch.forEach((item, i) => {
      const answered = reply.items[i];
      if (answered.ok) item.resolve(answered.value);
      else if (answered.moved) moved.push(item);
      else item.reject(errorOf(item.shard, answered.error));
    });
    if (moved.length > 0) sendPerShard(moved);
  }

  /**
   * Stops answering a shard's subject. Drained, not just unsubscribed: the server may have routed a request here
   * before it learned of the UNSUB, and a subscription dropped at once on this side would ignore it, leaving its
   * caller to time out on a request that never ran. Drained, it is refused as `moved` (the shard is no longer
   * owned) and asked again. Bounded: while NATS is away nothing more can arrive, and a drain waits for the server.
   */
  async function stopServing(subscription: Subscription): Promise<void> {
    if (deps.connected()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        subscription.drain().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, deps.requestTimeoutMs))),
      ]);
      clearTimeout(timer);
    }
    if (!subscription.isClosed()) subscription.unsubscribe();
  }

  /** Forwarded requests of this turn; sent together once the turn's I/O callbacks ran. */
  let queued: Queued[] = [];
  let flushing: NodeJS.Immediate | null = null;

  function flush(): void {
    flushing = null;
    const items = queued;
    queued = [];
    const byOwner = new Map<string, Queued[]>();
    const perShard: Queued[] = [];
    for (const item of items) {
      const owner = deps.ownerOf?.(item.shard) ?? null;
      // Unknown, or this instance (a shard it is acquiring or handing over): the shard's subject decides.
      if (owner === null || owner === address) {
        perShard.push(item);
        continue;
      }
      const list = byOwner.get(owner);
      if (list) list.push(item);
      else byOwner.set(owner, [item]);
    }
    sendPerShard(perShard);
    for (const [owner, list] of byOwner)
      split(list, ownerJson, (batch) => settleAll(batch, sendToOwner(owner, batch)));
  }

  return {
    serve(next: ShardHandler): void {
      handler = next;
    },

    /** Starts answering this instance's own subject (requests for any shard it owns, refused for others). */
    async listen(): Promise<void> {
      if (ownSubscription) return;
      ownSubscription = nc.subscribe(ownerSubject(address), {
        callback: (err, msg) => {
          if (err) {
            log.warn({ err }, "Subscription to this instance's subject failed");
            return;
          }
          answerOwner(msg);
        },
      });
      await nc.flush();
    },

    /** Starts answering a shard's subject (its lease was just acquired); resolves once the server knows. */
    async open(shard: number): Promise<void> {
      if (subscriptions.has(shard)) return;
      subscriptions.set(
        shard,
        nc.subscribe(subject(shard), {
          queue: 'owner',
          callback: (err, msg) => {
            if (err) {
              log.warn({ err }, `Subscription to shard ${shard} failed`);
              return;
            }
            track(
              [shard],
              answer(shard, msg).catch((failure: unknown) =>
                log.error({ err: failure }, `Answering shard ${shard} failed`),
              ),
            );
          },
        }),
      );
      await nc.flush();
    },

    /**
     * Stops answering a shard's subject (its lease was lost or released); resolves once the answers already
     * under way went out, so a released shard's key is deleted only after its last answer.
     */
    async close(shard: number): Promise<void> {
      const subscription = subscriptions.get(shard);
      subscriptions.delete(shard);
      if (subscription) await stopServing(subscription);
      const pending = inFlight.get(shard);
      while (pending && pending.size > 0) await Promise.allSettled([...pending]);
    },

    /**
     * Runs `payload` on the owner of `productId`'s shard: here if this instance owns it, else over NATS, in one
     * message with this event-loop turn's other requests for that owner (or for that shard, owner unknown).
     */
    async request<T = unknown>(
      productId: number,
      payload: unknown,
      options: { replyBytes?: number } = {},
    ): Promise<T> {
      const shard = deps.shardOf(productId);
      if (deps.owns(shard)) return (await runInPlace(shard, productId, payload)) as T;
      if (!deps.connected()) throw unavailable('The cluster is unreachable');
      return new Promise<T>((resolve, reject) => {
        queued.push({
          shard,
          productId,
          payload,
          json: JSON.stringify({ productId, payload }),
          replyBytes: options.replyBytes ?? 0,
          resolve: resolve as (value: unknown) => void,
          reject,
        });
        flushing ??= setImmediate(flush);
      });
    },

    /** Resolves when every request this instance is answering has been answered. */
    async idle(): Promise<void> {
      const all = () => [...inFlight.values()].flatMap((pending) => [...pending]);
      while (all().length > 0) await Promise.allSettled(all());
    },
  };
}

export type Forwarder = ReturnType<typeof createForwarder>;
