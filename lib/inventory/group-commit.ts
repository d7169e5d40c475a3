// Group commit: one queue per process that writes every waiting request (already reserved in memory by
// the product actors) in ONE transaction: one guarded stock UPDATE for the batch's products, then each
// caller's writer (the orders area's multi-row INSERTs) for its requests. Requests that arrive while a
// flush is in flight wait for the next one, so the batch grows with the load (PERF-NOTES.md: batching
// pays for hot AND spread load). A request is answered only after the transaction holding its deduction
// committed. Any failure releases every reservation of the batch and writes nothing; when a guard
// refuses (another process sold the stock, or a seller's edit bumped the catalog version the requests
// were judged on) the product's actor re-reads the database and each request decides again.
// The actors' reads of their products (`read`) never overlap a batch's transaction: a read that raced a COMMIT
// could not tell whether it saw the batch, whose news (COMMITTED) the actor gets only after the COMMIT, so the
// actor might take the batch's units off a stock that already lacks them and refuse units the database holds.
// A batch whose COMMIT was lost is the one exception: checking its outcome may take seconds, so it is checked
// beside the next batches while its products are held, and they are re-read once the outcome is known (settleLost).
import type { Db } from '../db';
import { isDeadlockVictim } from '../db';
import type { Logger } from '../logger';
import type { Reservation, StockRegistry } from '../../actors/registry';
import { judgedTotals } from '../../actors/stock-rules';
import { CommitLost, CommitNotApplied, transactionOrCommitLost } from '../commit-outcome';
import {
  WriterRefused,
  type AnnounceChanges,
  type DecidedRequest,
  type StockChange,
  type StockWriter,
} from './inventory';
import { deductStockBatch } from './stock-repository';

/** The batch was rolled back for a reason that deciding again may fix; the reservations are released. */
export class RetryPlacement extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RetryPlacement';
  }
}

class GuardRefused extends Error {
  constructor(readonly productIds: number[]) {
    super(`Stock guard refused products ${productIds.join(', ')}`);
  }
}

interface Queued {
  request: DecidedRequest<unknown>;
  writer: StockWriter<unknown, unknown>;
  reservations: Reservation[];
  resolve: (result: unknown) => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  db: Db;
  logger: Logger;
  registry: StockRegistry;
  /** After a commit: announce the changed products (awaited before the requests are answered). */
  announce: AnnounceChanges;
  maxBatch?: number;
  /** Told the size of every batch that committed (metrics); kept cheap, it runs on the commit path. */
  onBatchCommitted?: (size: number) => void;
}

/** Runs each writer once for its requests of the batch; results come back in batch order. */
async function writeAll(
  trx: Parameters<StockWriter<unknown, unknown>['write']>[0],
  batch: Queued[],
  now: Date,
) {
  const results: unknown[] = new Array(batch.length);
  const byWriter = new Map<StockWriter<unknown, unknown>, number[]>();
  batch.forEach((entry, index) => {
    const indexes = byWriter.get(entry.writer);
    if (indexes) indexes.push(index);
    else byWriter.set(entry.writer, [index]);
  });
  for (const [writer, indexes] of byWriter) {
    const written = await writer.write(
      trx,
      indexes.map((index) => batch[index].request),
      now,
    );
    indexes.forEach((index, position) => (results[index] = written[position]));
  }
  return results;
}

/** Whether a batch whose COMMIT was lost is in the database (each writer checks its own rows). */
async function batchCommitted(db: Db, batch: Queued[], results: unknown[]): Promise<boolean> {
  const byWriter = new Map<StockWriter<unknown, unknown>, unknown[]>();
  batch.forEach((entry, index) => {
    const written = byWriter.get(entry.writer);
    if (written) written.push(results[index]);
    else byWriter.set(entry.writer, [results[index]]);
  });
  for (const [writer, written] of byWriter) if (!(await writer.committed(db, written))) return false;
  return true;
}

/** Resolves after the I/O callbacks of the current event-loop turn ran (setImmediate: the check phase). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createGroupCommit(options: GroupCommitOptions) {
  const { db, registry } = options;
  const log = options.logger.child({ component: 'GroupCommit' });
  const maxBatch = options.maxBatch ?? 256;
  const queue: Queued[] = [];
  let flushing: Promise<void> | null = null;
  const finishing = new Set<Promise<void>>();
  /**
   * The next batch, from the moment the flush loop takes it (and waits for the reads under way) through its
   * transaction and its news to the actors (registry.committedAll). A read asked for meanwhile starts after it, so
   * reads that keep overlapping one another cannot hold the batches back.
   */
  let inFlight: Promise<void> | null = null;
  /** Product reads under way: the next batch starts after them. */
  const reads = new Set<Promise<unknown>>();
  /** Products of batches whose lost COMMIT is being checked (settleLost), with how many such batches hold each. */
  const held = new Map<number, number>();
  const touchesHeld = (reservations: Reservation[]) =>
    held.size > 0 && reservations.some((reservation) => held.has(reservation.productId));

  async function commitBatch(batch: Queued[]): Promise<void> {
    const judged = judgedTotals(batch.flatMap((entry) => entry.reservations));
    // The batch's requests judged a product on different versions (its view was re-read in between): it
    // cannot be written as decided, so it is refused as the guard would, without a round trip.
    const changes = judged.ok ? judged.changes : [];
    let results: unknown[];
    try {
      if (!judged.ok) throw new GuardRefused(judged.productIds);
      results = await transactionOrCommitLost(
        { db, logger: options.logger, committed: (written) => batchCommitted(db, batch, written) },
        async (trx) => {
          const now = new Date();
          if (!(await deductStockBatch(trx, changes, now)))
            throw new GuardRefused(changes.map((change) => change.productId));
          return writeAll(trx, batch, now);
        },
      );
    } catch (err) {
      if (err instanceof CommitLost) {
        settleLost(batch, changes, err as CommitLost<unknown[]>);
        return;
      }
      for (const entry of batch) for (const reservation of entry.reservations) registry.release(reservation);
      if (err instanceof GuardRefused) {
        for (const productId of err.productIds) registry.reload(productId);
        // Another process changed these products: every cached copy (here and, in a cluster, elsewhere) goes.
        // The batch is still in flight here, so an announcement must never wait for an actor's read (`read`
        // waits for this batch): its listeners drop caches and tell actors, and publish without waiting.
        await options
          .announce(err.productIds)
          .catch((failure: unknown) => log.error({ err: failure }, 'Announcing refused products failed'));
        for (const entry of batch) entry.reject(new RetryPlacement(err.message));
      } else if (err instanceof WriterRefused) {
        const refused = new Map(err.refused.map(({ request, error }) => [request, error]));
        for (const entry of batch)
          entry.reject(refused.get(entry.request) ?? new RetryPlacement(err.message));
      } else if (isDeadlockVictim(err)) {
        for (const entry of batch) entry.reject(new RetryPlacement('deadlock'));
      } else {
        // A lock wait that timed out (ER_LOCK_WAIT_TIMEOUT, SQLITE_BUSY: a row or the file held elsewhere for the
        // whole limit) is not decided again: the next batch would wait behind the same row, and with it every
        // request for other products. The batch's requests are answered 503 with Retry-After (lib/db-errors.ts).
        log.error({ err }, `Group commit of ${batch.length} request(s) failed`);
        for (const entry of batch) entry.reject(err);
      }
      return;
    }
    registry.committedAll(batch.flatMap((entry) => entry.reservations));
    finish(answerCommitted(batch, changes, results));
  }

  /** Counts a committed batch and answers its requests after the announcements (caches dropped). */
  async function answerCommitted(batch: Queued[], changes: StockChange[], results: unknown[]): Promise<void> {
    options.onBatchCommitted?.(batch.length);
    await options
      .announce(
        changes.map((change) => change.productId),
        'stock',
      )
      .catch((err) => log.error({ err }, 'Announcing the committed stock changes failed'));
    batch.forEach((entry, index) => entry.resolve(results[index]));
  }

  /** Tracks work that answers a batch after the flush loop let it go (drain waits for it). */
  function finish(work: Promise<void>): void {
    finishing.add(work);
    void work.finally(() => finishing.delete(work));
  }

  /**
   * A batch whose COMMIT was lost: its outcome is checked beside the next batches, not in front of them (a check may
   * wait seconds for the database, while the lost transaction, still open on the server, holds its products' rows).
   * Until it is known, the batch's products are held by their actors as a product write holds them
   * (registry.exclusive): no request for them is decided or joins a batch that would meet those row locks, and no
   * read of them counts the batch in or out. The requests already queued for them, and those reserved before the
   * hold that are submitted during it (`submit`), decide again, and wait the same way. Then each product is read
   * afresh, which counts the batch right either way; its reservations were released first, so nothing counts it
   * twice. Requests for other products go on meanwhile.
   */
  function settleLost(batch: Queued[], changes: StockChange[], lost: CommitLost<unknown[]>): void {
    const products = [...new Set(changes.map((change) => change.productId))];
    for (const productId of products) held.set(productId, (held.get(productId) ?? 0) + 1);
    const requeued = queue.filter((entry) => touchesHeld(entry.reservations));
    if (requeued.length > 0)
      queue.splice(0, queue.length, ...queue.filter((entry) => !touchesHeld(entry.reservations)));
    // Released before the actors are held, so the fresh read after the outcome is the only count of the batch.
    for (const entry of [...batch, ...requeued])
      for (const reservation of entry.reservations) registry.release(reservation);
    for (const entry of requeued) entry.reject(new RetryPlacement('A lost COMMIT holds these products'));
    const outcome = lost.check();
    // Once the outcome is known the products are no longer held here; their actors still defer requests until
    // their fresh read is done.
    const known = outcome.then(
      () => undefined,
      () => undefined,
    );
    void known.then(() => {
      for (const productId of products) {
        const count = held.get(productId)!;
        if (count > 1) held.set(productId, count - 1);
        else held.delete(productId);
      }
    });
    const refreshed = products.map((productId) =>
      registry
        .exclusive(productId, () => known)
        .catch((err: unknown) => {
          // The actor stopped before its turn came (the inventory is stopping): the next one reads the product anew.
          log.warn({ err, productId }, 'Holding a product until a lost COMMIT is known failed');
        }),
    );
    finish(
      outcome
        .then(
          (results) => answerCommitted(batch, changes, results),
          (err: unknown) => {
            const retry = err instanceof CommitNotApplied;
            for (const entry of batch) entry.reject(retry ? new RetryPlacement((err as Error).message) : err);
          },
        )
        .then(() => Promise.all(refreshed).then(() => undefined)),
    );
  }

  /**
   * Starts the flush loop unless it runs; it clears `flushing` in the same tick the queue is found empty.
   * Each batch is taken one event-loop turn after the loop starts or the previous batch ends, so every
   * request submitted in the meantime (all the sockets read in that poll) joins it. Without that turn a
   * database that answers synchronously (better-sqlite3) commits the first request alone, and under load
   * each one alone: the whole transaction runs in microtasks before the next socket is read
   * (bench/README.md, orders, issue 13 2026-11-24: 1 order per commit before, ~50 after).
   */
  function startFlushing(): void {
    if (flushing) return;
    flushing = (async () => {
      try {
        do {
          await nextTurn();
          let ended!: () => void;
          inFlight = new Promise<void>((resolve) => (ended = resolve));
          try {
            while (reads.size > 0) await Promise.allSettled([...reads]);
            await commitBatch(queue.splice(0, maxBatch));
          } finally {
            inFlight = null;
            ended();
          }
        } while (queue.length > 0);
      } finally {
        flushing = null;
      }
    })();
  }

  return {
    /** Queues a decided, reserved request; resolves with its writer's result after its transaction committed. */
    submit<D, R>(
      request: DecidedRequest<D>,
      writer: StockWriter<D, R>,
      reservations: Reservation[],
    ): Promise<R> {
      // Reserved before a lost COMMIT's products were held (e.g. a cart that waited for another product's read):
      // it decides again, and waits behind the hold.
      if (touchesHeld(reservations)) {
        for (const reservation of reservations) registry.release(reservation);
        return Promise.reject(new RetryPlacement('A lost COMMIT holds these products'));
      }
      return new Promise<R>((resolve, reject) => {
        queue.push({
          request,
          writer: writer as StockWriter<unknown, unknown>,
          reservations,
          resolve: resolve as (result: unknown) => void,
          reject,
        });
        startFlushing();
      });
    },
    /**
     * Runs a read of products' stock (an actor's load) when no batch is in flight, and holds the next batch until
     * it is done: every batch the read sees has told its actors, every other one starts after it.
     */
    async read<T>(load: () => Promise<T>): Promise<T> {
      while (inFlight) await inFlight.catch(() => undefined);
      const reading = load();
      reads.add(reading);
      try {
        return await reading;
      } finally {
        reads.delete(reading);
      }
    },
    /** Waits until every queued request is committed (or failed) and answered. */
    async drain(): Promise<void> {
      while (flushing || finishing.size > 0) {
        if (flushing) await flushing;
        await Promise.all([...finishing]);
      }
    },
  };
}

export type GroupCommit = ReturnType<typeof createGroupCommit>;
