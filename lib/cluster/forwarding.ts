// Forwarding to a shard's owner: the owner subscribes to `<prefix>.shard.<n>` (queue group, so a request is
// answered once even while an old and a new owner briefly overlap) and answers with the handler the app
// serves; a caller that owns the shard itself runs the handler in place. JSON envelopes both ways; an
// AppError travels as status/code/message and is rebuilt as the same class. Whatever keeps a request from
// its owner (no owner: "no responders", a timeout, an instance that just lost the shard) is a 503
// SERVICE_UNAVAILABLE with Retry-After, never a hang and never a 500.
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

interface RequestEnvelope {
  v: 1;
  productId: number;
  payload: unknown;
  origin: string;
}

type ReplyEnvelope = { v: 1; ok: true; value: unknown } | { v: 1; ok: false; error: WireError };

/** A 503 for a request that reached an owner (or was in flight to one) but got no answer: it may have run. */
export class OwnerDidNotAnswerError extends ServiceUnavailableError {}

export interface ForwarderDeps {
  nc: NatsConnection;
  prefix: string;
  instanceId: string;
  requestTimeoutMs: number;
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

  async function answer(shard: number, msg: Msg): Promise<void> {
    let reply: ReplyEnvelope;
    try {
      if (!deps.owns(shard) || !handler) throw unavailable(`Shard ${shard} is moving`);
      const request = msg.json<RequestEnvelope>();
      const value = await handler({
        productId: request.productId,
        shard,
        payload: request.payload,
        origin: request.origin,
      });
      reply = { v: 1, ok: true, value: value === undefined ? null : value };
    } catch (err) {
      if (!(err instanceof AppError)) log.error({ err }, `Request for shard ${shard} failed`);
      const error =
        err instanceof AppError
          ? toWireError(err)
          : { status: 500, code: 'INTERNAL_ERROR', message: 'An unexpected error occurred' };
      reply = { v: 1, ok: false, error };
    }
    if (!msg.respond(JSON.stringify(reply))) log.warn(`Request for shard ${shard} had no reply subject`);
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

    /** Runs `payload` on the owner of `productId`'s shard: here if this instance owns it, else over NATS. */
    async request<T = unknown>(productId: number, payload: unknown): Promise<T> {
      const shard = deps.shardOf(productId);
      if (deps.owns(shard)) {
        if (!handler) throw unavailable('This instance is not serving yet');
        return jsonCopy(await handler({ productId, shard, payload, origin: instanceId })) as T;
      }
      if (!deps.connected()) throw unavailable('The cluster is unreachable');
      const envelope: RequestEnvelope = { v: 1, productId, payload, origin: instanceId };
      let reply: ReplyEnvelope;
      try {
        const msg = await nc.request(subject(shard), JSON.stringify(envelope), {
          timeout: deps.requestTimeoutMs,
        });
        reply = msg.json<ReplyEnvelope>();
      } catch (err) {
        const why = (err as Error).message ?? String(err);
        log.warn(`Request to shard ${shard} (product ${productId}) failed: ${why}`);
        if (/no responders/i.test(why)) throw unavailable(`No instance serves shard ${shard} right now`);
        // The owner got it (or died holding it): it may have run.
        throw new OwnerDidNotAnswerError(`Shard ${shard} did not answer; please retry`, deps.retryAfterSeconds);
      }
      if (reply.ok) return reply.value as T;
      if (reply.error.status >= 500 && reply.error.code === 'INTERNAL_ERROR') {
        throw new Error(`The owner of shard ${shard} failed: ${reply.error.message}`);
      }
      throw fromWireError(reply.error);
    },

    /** Resolves when every request this instance is answering has been answered. */
    async idle(): Promise<void> {
      const all = () => [...inFlight.values()].flatMap((pending) => [...pending]);
      while (all().length > 0) await Promise.allSettled(all());
    },
  };
}

export type Forwarder = ReturnType<typeof createForwarder>;
