// Delivers outbox rows after commit, asynchronously: each becomes a `notifications` row for its recipient
// (the unique outbox_id collapses duplicate deliveries, so at-least-once delivery is exactly-once
// visible) and a log line carrying the request id of the request that caused it. The line is written inside the
// delivery's transaction, before its COMMIT: a crash after the COMMIT cannot lose it, and one before it delivers
// (and logs) the row again, so the line is at least once, like the delivery. Failed deliveries are retried with
// exponential backoff; rows left pending by a crash are picked up on start and by a slow sweep.
import Emittery from 'emittery';
import type { Knex } from 'knex';
import { outcomeRead, transactionWithOutcome, type OutcomeOptions } from '../commit-outcome';
import { dialect, type Db } from '../db';
import { safeErrorMessage } from '../db-errors';
import type { Logger } from '../logger';
import { outsideRequest } from '../request-context';

export interface DispatcherEvents {
  /** After each delivered batch (tests and metrics listen). */
  delivered: { outboxIds: number[] };
  failed: { outboxIds: number[]; error: string };
}

export interface DispatcherOptions {
  db: Db;
  logger: Logger;
  batchSize?: number;
  /** First retry delay; doubles per attempt up to maxBackoffMs. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Safety net for rows another process left behind (crash) while this one runs. */
  sweepIntervalMs?: number;
  /**
   * While commits keep kicking it (load), the pause between one delivery run and the next, so the outbox fills
   * and one transaction delivers many orders' rows. A kick while idle delivers at once.
   */
  pauseMs?: number;
  /** How a pause is waited (tests hold it); a timer by default. */
  pause?: (ms: number) => Promise<void>;
}

export interface PendingRow {
  id: number | string;
  event_type: string;
  recipient_id: number;
  payload: string;
  request_id: string | null;
  attempts: number;
  /** When the cause committed (the outbox row's time): the notification's createdAt. */
  created_at: Date | string | number;
}

/**
 * The delivery transaction. On MySQL/MariaDB it runs at READ COMMITTED: its locking read then locks the rows it
 * claims and no gaps. At REPEATABLE READ (the default) the read also took next-key locks on the pending index up
 * to the first row past the due range, which is exactly where every new order's outbox rows go, so an order
 * commit waited for a delivery to commit (bench/README.md, Cluster, 2026-11-24: the row-lock waits sampled in
 * the 2-instance spread runs were all of this kind). SQLite has one writer and no isolation levels to choose.
 * A COMMIT lost on the way is checked with `outcome` (lib/commit-outcome.ts) instead of failing at once.
 */
export function inClaimTransaction<T>(
  db: Db,
  run: (trx: Knex.Transaction) => Promise<T>,
  outcome: Pick<OutcomeOptions<T>, 'logger' | 'committed'>,
): Promise<T> {
  const config: Knex.TransactionConfig | undefined = dialect.isMysql(db)
    ? { isolationLevel: 'read committed' }
    : undefined;
  const unknown = () => new DeliveryOutcomeUnknown();
  return transactionWithOutcome({ db, ...outcome, config, unknown }, run);
}

/** A delivery's COMMIT was lost and the database could not tell whether it applied (its rows are retried). */
class DeliveryOutcomeUnknown extends Error {
  constructor() {
    super('The outcome of a delivery whose COMMIT was lost could not be checked');
    this.name = 'DeliveryOutcomeUnknown';
  }
}

/**
 * Whether the delivery of `rows` at `at` is in the database (after a lost COMMIT: did it apply?): every row marked
 * delivered at that moment.
 */
async function deliveryCommitted(db: Db, rows: PendingRow[], at: Date): Promise<boolean> {
  if (rows.length === 0) return true; // nothing was claimed, nothing written
  const delivered = db('notification_outbox')
    .whereIn(
      'id',
      rows.map((row) => row.id),
    )
    .where('delivered_at', at)
    .count({ n: '*' });
  const found = (await outcomeRead(db, delivered).first()) as { n: number | string };
  return Number(found.n) === rows.length;
}

/**
 * Claims up to `batchSize` due rows inside `trx` (inClaimTransaction's): on MySQL/MariaDB the rows stay locked
 * until commit and other dispatchers (other instances on this database) skip them instead of delivering them a
 * second time; SQLite's one writer serialises the claim. The order follows the pending index (delivered_at,
 * next_attempt_at, id): ordering by id alone would filesort, and InnoDB would then lock every pending row, not
 * just this batch, leaving nothing for the other dispatchers.
 */
export async function claimDue(trx: Knex.Transaction, now: Date, batchSize: number): Promise<PendingRow[]> {
  const due = trx('notification_outbox')
    .whereNull('delivered_at')
    .where('next_attempt_at', '<=', now)
    .orderBy([{ column: 'next_attempt_at' }, { column: 'id' }])
    .limit(batchSize)
    .select('id', 'event_type', 'recipient_id', 'payload', 'request_id', 'attempts', 'created_at');
  return (await (dialect.isMysql(trx) ? due.forUpdate().skipLocked() : due)) as PendingRow[];
}

export function backoffMs(attempts: number, base: number, max: number): number {
  return Math.min(max, base * 2 ** Math.max(0, attempts - 1));
}

export function createNotificationDispatcher(options: DispatcherOptions) {
  const { db } = options;
  const log = options.logger.child({ component: 'NotificationDispatcher' });
  const batchSize = options.batchSize ?? 200;
  const base = options.baseBackoffMs ?? 200;
  const max = options.maxBackoffMs ?? 60_000;
  const sweepEvery = options.sweepIntervalMs ?? 5_000;
  const pauseMs = options.pauseMs ?? 100;
  const pause = options.pause ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const events = new Emittery<DispatcherEvents>();

  let running: Promise<void> | null = null;
  let endPause: (() => void) | null = null;
  let again = false;
  let stopped = true;
  let retryTimer: NodeJS.Timeout | null = null;
  let sweepTimer: NodeJS.Timeout | null = null;
  /** The delivery's log lines, one per row (inside its transaction, before the COMMIT). */
  function logDeliveries(rows: PendingRow[]): void {
    for (const row of rows) {
      // A payload that does not parse still gets its line (without the order), never holds up the batch.
      let payload: { orderId?: number; from?: string; to?: string } = {};
      try {
        payload = JSON.parse(row.payload) as typeof payload;
      } catch {
        log.warn(`Outbox row ${row.id} has a payload that is not JSON`);
      }
      const what = row.event_type === 'OrderStatusChanged' ? ` ${payload.from} -> ${payload.to}` : '';
      // The originating request's id, so the delivery can be traced back to the request that caused it (none for
      // the system's own changes, such as an expiry: the run is outside any request, see kick).
      log.info(
        { requestId: row.request_id ?? undefined },
        `Delivered ${row.event_type}${what} for order ${payload.orderId} to member ${row.recipient_id} (outbox ${row.id})`,
      );
    }
  }

  /**
   * After a failed delivery: each row is due again after its backoff (a row delivered meanwhile is left alone).
   * One UPDATE per attempt count; the first that fails ends it (the database is down: the rows stay due now, and
   * the retry timer comes back to them), so a stop() is never held up by one UPDATE per row.
   */
  async function backOff(rows: PendingRow[], message: string): Promise<void> {
    const byAttempts = new Map<number, Array<number | string>>();
    for (const row of rows)
      byAttempts.set(row.attempts + 1, [...(byAttempts.get(row.attempts + 1) ?? []), row.id]);
    for (const [attempts, ids] of byAttempts) {
      try {
        await db('notification_outbox')
          .whereIn('id', ids)
          .whereNull('delivered_at')
          .update({
            attempts,
            last_error: message.slice(0, 1000),
            next_attempt_at: new Date(Date.now() + backoffMs(attempts, base, max)),
          });
      } catch {
        return;
      }
    }
  }

  /** Delivers one batch of due rows; returns how many were due. */
  async function deliverBatch(): Promise<number> {
    const now = new Date();
    let rows: PendingRow[] = [];
    // A COMMIT lost on the way is checked (lib/commit-outcome.ts): applied, the rows were delivered; not applied
    // or unknown, the failure path retries them (a row already delivered is never delivered again: the retries
    // touch only undelivered rows, and the claim skips delivered ones).
    const outcome = {
      logger: options.logger,
      committed: (claimed: PendingRow[]) => deliveryCommitted(db, claimed, now),
    };
    try {
      await inClaimTransaction(
        db,
        async (trx) => {
          rows = await claimDue(trx, now, batchSize);
          if (rows.length === 0) return rows;
          await trx('notifications')
            .insert(
              rows.map((row) => ({
                member_id: row.recipient_id,
                outbox_id: row.id,
                type: row.event_type,
                payload: row.payload,
                created_at: new Date(row.created_at),
              })),
            )
            .onConflict('outbox_id')
            .ignore();
          await trx('notification_outbox')
            .whereIn(
              'id',
              rows.map((row) => row.id),
            )
            .whereNull('delivered_at')
            .update({ delivered_at: now, attempts: db.raw('attempts + 1') });
          logDeliveries(rows);
          return rows;
        },
        outcome,
      );
    } catch (err) {
      if (rows.length === 0) throw err; // nothing claimed: reading the outbox failed
      const message = safeErrorMessage(err); // stored in last_error: never SQL text or bound values
      log.warn({ err }, `Delivery of ${rows.length} notification(s) failed; retrying with backoff`);
      await backOff(rows, message);
      await events.emit('failed', { outboxIds: rows.map((row) => Number(row.id)), error: message });
      scheduleRetry(backoffMs(rows[0].attempts + 1, base, max));
      return 0;
    }
    if (rows.length === 0) return 0;
    await events.emit('delivered', { outboxIds: rows.map((row) => Number(row.id)) });
    return rows.length;
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      try {
        while ((await deliverBatch()) === batchSize);
      } catch (err) {
        // Reading the outbox failed (database unavailable): try again later.
        log.warn({ err }, 'Reading the outbox failed; retrying');
        scheduleRetry(backoffMs(1, base, max));
      }
      // Kicked meanwhile: more rows are coming (under load, with every commit), so let them gather; a stop()
      // ends the pause at once.
      if (again && !stopped && pauseMs > 0) {
        await Promise.race([pause(pauseMs), new Promise<void>((resolve) => (endPause = resolve))]);
        endPause = null;
      }
    } while (again);
  }

  function scheduleRetry(delay: number): void {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      kick();
    }, delay);
    retryTimer.unref();
  }

  /**
   * Asks for a delivery run (after a commit); runs coalesce. The run is outside the kicking request's context: it
   * delivers other requests' rows too, each logged with its own request id.
   */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = outsideRequest(drain).finally(() => {
      running = null;
      // Kicked after the run's last look at `again` but before this: that kick starts its run now.
      if (again) kick();
    });
  }

  return {
    events,
    kick,
    /** Starts delivering, beginning with whatever a previous process left pending. */
    start(): void {
      stopped = false;
      sweepTimer = setInterval(kick, sweepEvery);
      sweepTimer.unref();
      kick();
    },
    /** Delivers what is due now, then stops the timers. */
    async stop(): Promise<void> {
      const wasStarted = !stopped;
      // From here on no kick starts a run, no retry is scheduled and no run pauses (a pause under way ends).
      stopped = true;
      endPause?.();
      if (sweepTimer) clearInterval(sweepTimer);
      if (retryTimer) clearTimeout(retryTimer);
      sweepTimer = retryTimer = null;
      if (running) await running;
      if (wasStarted) await drain();
    },
    /** Resolves when no delivery run is in flight (tests). */
    async idle(): Promise<void> {
      while (running) await running;
    },
  };
}

export type NotificationDispatcher = ReturnType<typeof createNotificationDispatcher>;
