// A transaction whose COMMIT was sent but not acknowledged (the connection dropped) may or may not have
// committed. Instead of guessing, ask the database on a fresh connection whether the written rows exist, and end
// the lost connection on the server when it still holds the transaction open; only when that cannot be learned
// either is the outcome reported as unknown.
import type { Knex } from 'knex';
import { dialect, isServerWaitTimeout, type Db, type Trx } from './db';
import { endLost, lostServerConnection } from './lost-connections';
import { CommitOutcomeUnknownError } from './errors';
import type { Logger } from './logger';

/** The transaction was rolled back (its COMMIT was lost before the server applied it): nothing exists. */
export class CommitNotApplied extends Error {
  constructor() {
    super('The COMMIT was lost before the database applied it');
    this.name = 'CommitNotApplied';
  }
}

/**
 * A `committed` check's read of the rows a transaction whose COMMIT was lost may have written. On MySQL/MariaDB a
 * locking read: the COMMIT may still be on its way (the client gave up on the connection), and until the server
 * ends that transaction (committed, or rolled back when the connection closes) its uncommitted rows are locked,
 * so the read waits for its outcome instead of reporting rows about to exist as missing (bounded by the session's
 * lock wait timeout; failing, the lost connection is ended on the server and the check tried again). SQLite is
 * in-process: no COMMIT is ever on its way.
 */
export function outcomeRead<Q extends Knex.QueryBuilder>(db: Db, query: Q): Q {
  return dialect.isMysql(db) ? (query.forShare() as Q) : query;
}

const CHECK_ATTEMPTS = 4;
const CHECK_PAUSE_MS = 250;

export interface OutcomeOptions<T> {
  db: Db;
  logger: Logger;
  /** Whether `written` is in the database (asked only after a lost COMMIT). */
  committed(written: T): Promise<boolean>;
  /** The error thrown when the outcome cannot be learned; CommitOutcomeUnknownError (a request's 503) by default. */
  unknown?: () => Error;
  /** The transaction's settings (an isolation level). */
  config?: Knex.TransactionConfig;
}

/**
 * A transaction's COMMIT failed on the way (thrown by transactionOrCommitLost): `check()` learns whether it applied.
 * It resolves with `work`'s result when the rows exist, throws CommitNotApplied when they do not, and `unknown`'s
 * error when CHECK_ATTEMPTS checks, CHECK_PAUSE_MS apart, all fail. Each check is bounded by the database timeouts;
 * on MySQL/MariaDB a check that finds the lost transaction still open waits for it up to the lock wait timeout
 * (DB_STATEMENT_TIMEOUT_MS rounded up to seconds): a COMMIT still on its way may land meanwhile. When the server
 * answers that the check waited in vain, the lost connection is ended on the server (KILL CONNECTION, endLost), so
 * the next check finds the outcome instead of waiting again for a transaction the server would otherwise keep open
 * for hours when it never learned of the loss. Only when the database cannot be reached do all four checks fail
 * (~21 s with the defaults); the lost connection is then ended in the background once it can be.
 */
export class CommitLost<T> extends Error {
  constructor(
    cause: unknown,
    readonly check: () => Promise<T>,
  ) {
    super('The connection was lost during COMMIT', { cause });
    this.name = 'CommitLost';
  }
}

/**
 * Runs `work` in a transaction. A failure before COMMIT is thrown as is (nothing was written); a failure of the
 * COMMIT itself is thrown as CommitLost, whose `check()` the caller may run when it suits it (the group commit
 * runs it beside its next batches).
 */
export async function transactionOrCommitLost<T>(
  options: OutcomeOptions<T>,
  work: (trx: Trx) => Promise<T>,
): Promise<T> {
  let current: Trx | undefined;
  let written: { value: T } | undefined;
  try {
    return await options.db.transaction(async (trx) => {
      current = trx;
      const value = await work(trx);
      written = { value };
      return value;
    }, options.config);
  } catch (err) {
    const log = options.logger.child({ component: 'CommitOutcome' });
    // (A connection given up before the COMMIT is ended on the server in the background: lost-connections.ts.)
    if (!written) throw err;
    const { value } = written;
    log.warn({ err }, 'The connection was lost during COMMIT; checking');
    // The lost connection while the server may still hold it open (it is also ended after a lock wait in the
    // background, db-timeouts.ts; ending it twice is harmless).
    let open = await lostServerConnection(current!);
    throw new CommitLost(err, async () => {
      for (let attempt = 1; attempt <= CHECK_ATTEMPTS; attempt++) {
        try {
          if (await options.committed(value)) return value;
          throw new CommitNotApplied();
        } catch (checkErr) {
          if (checkErr instanceof CommitNotApplied) throw checkErr;
          // The server answered that the read waited in vain: it still holds the lost transaction open (a COMMIT on
          // its way would have landed meanwhile). Ended, the next check finds its outcome.
          if (open && isServerWaitTimeout(checkErr) && (await endLost(options.db, open, log))) open = null;
          if (attempt < CHECK_ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, CHECK_PAUSE_MS));
        }
      }
      log.error('The outcome of a lost COMMIT could not be checked');
      throw options.unknown?.() ?? new CommitOutcomeUnknownError(1);
    });
  }
}

/** transactionOrCommitLost with the check of a lost COMMIT run at once: its result, or its error. */
export async function transactionWithOutcome<T>(
  options: OutcomeOptions<T>,
  work: (trx: Trx) => Promise<T>,
): Promise<T> {
  try {
    return await transactionOrCommitLost(options, work);
  } catch (err) {
    if (err instanceof CommitLost) return (err as CommitLost<T>).check();
    throw err;
  }
}
