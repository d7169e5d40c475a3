// Leases held in one JetStream KV bucket whose bucket-wide max_age is the lease TTL: `create` claims a key
// only if nobody holds it, the holder renews with compare-and-set (`update` at its last revision), and a key
// nobody renews expires on the server. Releasing removes the holder's own message by its sequence (no
// delete marker is left behind, and a newer holder's message is never touched), and the live keys are
// read from the stream's per-subject state in one request (a key listing through a consumer can wait
// seconds for a heartbeat when keys expire while it runs). A CAS lost to another holder loses the lease at once.
// A renewal that fails otherwise (NATS restarting, no answer in time) is tried again while the lease is valid:
// until TTL minus one renewal period after its last renewal, so the holder always lets go before the server lets
// another instance claim the key (also when its event loop stalled). A renewal applied whose answer was lost
// shows as our own value at a newer revision, which is adopted; the read that tells is bounded by the lease's
// validity too. A renewal whose answer is lost while the key is released is looked up, and removed if it was applied
// (unless the key is being claimed again: the value read may be that claim's). A renewal the server applied only
// after the lease was lost (NATS stalled past the lease and past the renewal's wait for an answer) leaves our value
// in the key, which would keep it from everyone until it expires: the table remembers the keys it lost, and the next
// claim of one that finds our own value there takes it back by compare-and-set.
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { Logger } from '../logger';

interface Held {
  value: string;
  revision: number;
  /** When the write that produced `revision` was sent (the server's TTL started after that). */
  writtenAt: number;
}

export interface LeaseTableOptions {
  kv: KV;
  jsm: JetStreamManager;
  bucket: string;
  ttlMs: number;
  renewMs: number;
  logger: Logger;
  /** Called once per lease this table loses without being asked to release it (not awaited by the renewals). */
  onLost(key: string, reason: string): Promise<void> | void;
  now?: () => number;
}

export function isTaken(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

const EXPIRED = Symbol('expired');

export function createLeaseTable(options: LeaseTableOptions) {
  const { kv, ttlMs, renewMs, logger } = options;
  // Monotonic: a wall clock stepped back would stretch a lease past the server's TTL.
  const now = options.now ?? (() => performance.now());
  const held = new Map<string, Held>();
  /** Keys whose claim (`create`) is in flight: applied perhaps, its answer not here yet. */
  const claiming = new Set<string>();
  /** Set by `stopRetrying()` (the instance is leaving): a failed renewal is not tried again. */
  let retrying = true;
  /**
   * Keys this table lost, with the value it held: a renewal of ours still on its way may be applied after the loss.
   * Forgotten once a claim of the key settles who holds it.
   */
  const lostValues = new Map<string, string>();

  /** How long the lease may still be served on (it is lost at 0). */
  const remaining = (lease: Held) => lease.writtenAt + ttlMs - renewMs - now();
  const valid = (lease: Held) => remaining(lease) > 0;
  /** `work`'s result, or EXPIRED when the lease's validity ends first. */
  async function beforeExpiry<T>(lease: Held, work: Promise<T>): Promise<T | typeof EXPIRED> {
    let timer: NodeJS.Timeout | undefined;
    const expiry = new Promise<typeof EXPIRED>((resolve) => {
      timer = setTimeout(() => resolve(EXPIRED), Math.max(0, remaining(lease)));
    });
    try {
      return await Promise.race([work, expiry]);
    } finally {
      clearTimeout(timer);
    }
  }
  /** Pause between tries of a failed renewal. */
  const retryMs = Math.max(10, Math.floor(renewMs / 10));

  function lose(key: string, reason: string): void {
    const lease = held.get(key);
    if (!lease) return;
    held.delete(key);
    lostValues.set(key, lease.value);
    logger.warn(`Lease ${options.bucket}/${key} lost: ${reason}`);
    // Not awaited: what a loss sets off (a shard's in-flight orders answered first) must not hold up the
    // renewal of every other lease, which would then run out too.
    void Promise.resolve()
      .then(() => options.onLost(key, reason))
      .catch((err: unknown) =>
        logger.error({ err }, `Handling the loss of lease ${options.bucket}/${key} failed`),
      );
  }

  /** Removes our message `revision` of `key` (a newer holder's message is never touched). */
  async function removeRevision(key: string, revision: number): Promise<void> {
    try {
      await options.jsm.streams.deleteMessage(streamName(options.bucket), revision, false);
    } catch (err) {
      // Already gone (renewed since, or expired), or NATS is away: the TTL frees it anyway.
      logger.debug({ err }, `Releasing ${key} failed`);
    }
  }

  /**
   * The revision at which `key` holds our value newer than `lease`'s (a renewal of ours applied whose answer was
   * lost), null when it does not (absent, or someone else's), EXPIRED when the read outlasts the lease's validity:
   * a NATS server that stops answering costs the lease when it runs out, not at the request's own timeout.
   */
  async function ourNewerRevision(key: string, lease: Held): Promise<number | null | typeof EXPIRED> {
    const current = await beforeExpiry(
      lease,
      kv.get(key).catch(() => null),
    );
    if (current === EXPIRED) return EXPIRED;
    return current && current.revision > lease.revision && current.string() === lease.value
      ? current.revision
      : null;
  }

  /**
   * Released while a renewal was in flight whose answer was lost (not refused): the renewal may still have been
   * applied, leaving our value at a newer revision that would hold the key until it expires. That revision is
   * removed by its sequence (never another holder's message). Not when this table holds the key again, or is
   * claiming it: the value read may then be that claim's, applied with its answer still on the way. (Left in
   * place, a renewal applied does no harm but keeps the key taken until it expires, as before this clean-up.)
   * The read is bounded by the old lease's validity: past it the server's TTL frees the key.
   */
  async function removeLostRenewal(key: string, lease: Held): Promise<void> {
    const revision = await ourNewerRevision(key, lease);
    if (revision === EXPIRED || revision === null || held.has(key) || claiming.has(key)) return;
    await removeRevision(key, revision);
  }

  /**
   * `key`, which this table lost, is taken: by our own value, it is a renewal of ours the server applied after the
   * loss (its answer lost while NATS stalled). The value names one process (ownership.ts), so no other process holds
   * the key meanwhile: it is taken back with a compare-and-set at that revision, and held from that write. Otherwise
   * (someone else's value, or the key gone) nothing of ours can arrive any more: a renewal still on its way fails its
   * compare-and-set. Throws when NATS did not answer, or a write came between the read and the compare-and-set (the
   * next claim tries again).
   */
  async function takeBackLeftover(key: string, value: string): Promise<boolean> {
    const current = await kv.get(key);
    if (!current || current.operation !== 'PUT' || current.string() !== value) {
      lostValues.delete(key);
      return false;
    }
    const writtenAt = now();
    const revision = await kv.update(key, value, current.revision);
    held.set(key, { value, revision, writtenAt });
    lostValues.delete(key);
    logger.info(`Lease ${options.bucket}/${key}: our renewal applied after the loss was taken back`);
    return true;
  }

  async function renew(key: string, lease: Held): Promise<void> {
    let failure: string | null = null;
    while (held.get(key) === lease) {
      const left = remaining(lease);
      if (left <= 0) return lose(key, failure ? `not renewed in time (${failure})` : 'not renewed in time');
      const writtenAt = now();
      try {
        const revision = await kv.update(key, lease.value, lease.revision, Math.min(renewMs, left));
        // Released while the renewal was in flight: the release removed the old revision (or found it gone),
        // so the new one is removed here, or the key would stay taken until it expires.
        if (held.get(key) !== lease) return await removeRevision(key, revision);
        lease.revision = revision;
        lease.writtenAt = writtenAt;
        return;
      } catch (err) {
        if (held.get(key) !== lease) {
          if (!isTaken(err)) await removeLostRenewal(key, lease);
          return;
        }
        if (isTaken(err)) {
          // An earlier try of ours may have been applied with its answer lost: the key then holds our value at a
          // newer revision. Adopted (its write time unknown, the lease keeps the older one), then renewed again.
          const revision = await ourNewerRevision(key, lease);
          // Released (and perhaps claimed anew) during the read: that is no longer this lease's to lose.
          if (held.get(key) !== lease) return;
          if (revision === EXPIRED)
            return lose(key, 'not renewed in time (no answer to the read of the key)');
          if (revision !== null) {
            lease.revision = revision;
            continue;
          }
          return lose(key, 'taken over (compare-and-set failed)');
        }
        failure = (err as Error).message;
        if (!retrying) return;
        await new Promise((resolve) => setTimeout(resolve, Math.min(retryMs, Math.max(0, remaining(lease)))));
      }
    }
  }

  return {
    /**
     * Claims `key` if nobody holds it, or if it holds our own value left by a renewal applied after this table lost
     * it; false when someone else holds it (or NATS did not answer).
     */
    async claim(key: string, value: string): Promise<boolean> {
      if (held.has(key)) return true;
      const writtenAt = now();
      claiming.add(key);
      try {
        const revision = await kv.create(key, value);
        held.set(key, { value, revision, writtenAt });
        lostValues.delete(key);
        return true;
      } catch (err) {
        if (!isTaken(err)) {
          logger.debug({ err }, `Claiming ${key} failed`);
          return false;
        }
        if (lostValues.get(key) !== value) return false;
        return await takeBackLeftover(key, value).catch((failure: unknown) => {
          logger.debug({ err: failure }, `Taking back ${key} failed`);
          return false;
        });
      } finally {
        claiming.delete(key);
      }
    },

    /** Whether `key` may hold our own value left after this table lost it (a claim then takes it back). */
    mayHoldOurLeftover(key: string): boolean {
      return lostValues.has(key);
    },

    /**
     * Renews every lease (in parallel). A lease taken over is lost; a renewal that fails otherwise is tried again
     * until it succeeds or the lease runs out (then it is lost).
     */
    async renewAll(): Promise<void> {
      await Promise.all([...held].map(([key, lease]) => renew(key, lease)));
    },

    /**
     * The instance is leaving (its keys are released next): a renewal under way is not tried again after a
     * failure, so leaving does not wait for the leases' validity while NATS is away.
     */
    stopRetrying(): void {
      retrying = false;
    },

    /** Lets go of `key` at once: removes our revision only, so another holder is never hit. */
    async release(key: string): Promise<void> {
      const lease = held.get(key);
      if (!lease) return;
      held.delete(key);
      await removeRevision(key, lease.revision);
    },

    holds(key: string): boolean {
      const lease = held.get(key);
      return lease !== undefined && valid(lease);
    },

    keys(): string[] {
      return [...held.keys()];
    },
  };
}

export type LeaseTable = ReturnType<typeof createLeaseTable>;

const streamName = (bucket: string) => `KV_${bucket}`;

/** The keys currently present (held) in a bucket; expired and released keys are absent. */
export async function liveKeys(jsm: JetStreamManager, bucket: string): Promise<string[]> {
  return (await bucketState(jsm, bucket)).keys;
}

/**
 * A bucket's live keys and when its stream was created: a different creation time than before means the bucket
 * was made again (NATS lost its store), and every lease in it with it.
 */
export async function bucketState(
  jsm: JetStreamManager,
  bucket: string,
): Promise<{ keys: string[]; created: string }> {
  const info = await jsm.streams.info(streamName(bucket), { subjects_filter: '>' });
  const prefix = `$KV.${bucket}.`;
  const keys = Object.keys(info.state.subjects ?? {})
    .filter((subject) => subject.startsWith(prefix))
    .map((subject) => subject.slice(prefix.length));
  return { keys, created: info.created };
}
