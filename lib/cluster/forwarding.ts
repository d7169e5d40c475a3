// Forwarding to a shard's owner: the owner subscribes to `<prefix>.shard.<n>` (queue group, so a request is
// answered once even while an old and a new owner briefly overlap) and answers with the handler the app
// serves; a caller that owns the shard itself runs the handler in place. The requests a caller forwards to one
// shard within one event-loop turn travel as ONE NATS request (a batch): the owner starts them all in the same
// turn (so its group commit takes them together) and answers each in one reply, in order. JSON envelopes both
// ways; an AppError travels as status/code/message and is rebuilt as the same class, per request. Whatever
// keeps a batch from its owner (no owner: "no responders", a timeout, an instance that just lost the shard) is
// a 503 SERVICE_UNAVAILABLE with Retry-After for each of its requests, never a hang and never a 500.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
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

/** One NATS request: every request a caller forwarded to one shard in one event-loop turn. */
interface BatchEnvelope {
  v: 2;
  origin: string;
  items: Array<{ productId: number; payload: unknown }>;
}

type ItemReply = { ok: true; value: unknown } | { ok: false; error: WireError };

/** Either one answer per item, in the batch's order, or one error for the whole batch (the shard moved). */
type BatchReply = { v: 2; ok: true; items: ItemReply[] } | { v: 2; ok: false; error: WireError };

/** A forwarded request waiting for its batch to go out (or for its answer). */
interface Queued {
  productId: number;
  payload: unknown;
  /** The item's JSON in the batch envelope. */
  json: string;
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
  requestTimeoutMs: number;
  /** How long a request for an unowned shard keeps asking before its 503 (about one balancing round). */
  handoverWaitMs: number;
  /** Retry-After of a 503: about the time a shard takes to find a new owner. */
  retryAfterSeconds: number;
  shardOf(productId: number): number;
  owns(shard: number): boolean;
  /** While NATS is away a request would only wait for its timeout: refuse it at once. */
  connected(): boolean;
  logger: Logger;
}

export function createForwarder(deps: ForwarderDeps) {
  const { nc, instanceId } = deps;
  const log = deps.logger.child({ component: 'ClusterForwarder' });
  const subscriptions = new Map<number, Subscription>();
  /** Answers being worked out, per shard. */
  const inFlight = new Map<number, Set<Promise<void>>>();
  let handler: ShardHandler | null = null;

  const subject = (shard: number) => `${deps.prefix}.shard.${shard}`;
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
    if (err instanceof AppError) return toWireError(err);
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
      if (!deps.owns(shard) || !handler) throw unavailable(`Shard ${shard} is moving`);
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

  /** The error a wire error stands for on the caller: an owner's unexpected failure stays a plain Error (500). */
  function errorOf(shard: number, wire: WireError): Error {
    if (wire.status >= 500 && wire.code === 'INTERNAL_ERROR') {
      return new Error(`The owner of shard ${shard} failed: ${wire.message}`);
    }
    return fromWireError(wire);
  }

  async function runInPlace(shard: number, productId: number, payload: unknown): Promise<unknown> {
    if (!handler) throw unavailable('This instance is not serving yet');
    return jsonCopy(await handler({ productId, shard, payload, origin: instanceId }));
  }

  /** Sends one batch and settles each of its requests; never throws. */
  async function send(shard: number, batch: Queued[]): Promise<void> {
    const body = `{"v":2,"origin":${JSON.stringify(instanceId)},"items":[${batch.map((item) => item.json).join(',')}]}`;
    let reply: BatchReply;
    // A shard handed over on a join or a graceful leave is unowned for at most a balancing round: ask again
    // for that long before answering 503 (an owner that died leaves it unowned for the lease TTL).
    const handoverDeadline = Date.now() + deps.handoverWaitMs;
    for (;;) {
      try {
        const msg = await nc.request(subject(shard), body, { timeout: deps.requestTimeoutMs });
        reply = msg.json<BatchReply>();
        break;
      } catch (err) {
        const why = (err as Error).message ?? String(err);
        const noOwner = /no responders/i.test(why);
        if (noOwner && Date.now() < handoverDeadline) {
          await new Promise((resolve) => setTimeout(resolve, HANDOVER_POLL_MS));
          if (deps.owns(shard) && handler) {
            for (const item of batch)
              runInPlace(shard, item.productId, item.payload).then(item.resolve, item.reject);
            return;
          }
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

  /** Forwarded requests of this turn, per shard; sent together once the turn's I/O callbacks ran. */
  let queued = new Map<number, Queued[]>();
  let flushing: NodeJS.Immediate | null = null;

  function flush(): void {
    flushing = null;
    const batches = queued;
    queued = new Map();
    // One envelope under the server's message limit (a lone item over it fails as it always did).
    const limit = Math.max(1024, (nc.info?.max_payload ?? 1024 * 1024) - 1024);
    for (const [shard, items] of batches) {
      let batch: Queued[] = [];
      let size = 0;
      for (const item of items) {
        const bytes = Buffer.byteLength(item.json) + 1;
        if (batch.length > 0 && size + bytes > limit) {
          void send(shard, batch);
          batch = [];
          size = 0;
        }
        batch.push(item);
        size += bytes;
      }
      void send(shard, batch);
    }
  }

  return {
    serve(next: ShardHandler): void {
      handler = next;
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
            const work = answer(shard, msg).catch((failure: unknown) =>
              log.error({ err: failure }, `Answering shard ${shard} failed`),
            );
            const pending = inFlight.get(shard) ?? new Set<Promise<void>>();
            inFlight.set(shard, pending);
            pending.add(work);
            void work.finally(() => pending.delete(work));
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
      subscriptions.get(shard)?.unsubscribe();
      subscriptions.delete(shard);
      const pending = inFlight.get(shard);
      while (pending && pending.size > 0) await Promise.allSettled([...pending]);
    },

    /**
     * Runs `payload` on the owner of `productId`'s shard: here if this instance owns it, else over NATS, in one
     * batch with the other requests for that shard of this event-loop turn.
     */
    async request<T = unknown>(productId: number, payload: unknown): Promise<T> {
      const shard = deps.shardOf(productId);
      if (deps.owns(shard)) return (await runInPlace(shard, productId, payload)) as T;
      if (!deps.connected()) throw unavailable('The cluster is unreachable');
      return new Promise<T>((resolve, reject) => {
        const json = JSON.stringify({ productId, payload });
        const list = queued.get(shard);
        const item: Queued = {
          productId,
          payload,
          json,
          resolve: resolve as (value: unknown) => void,
          reject,
        };
        if (list) list.push(item);
        else queued.set(shard, [item]);
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
