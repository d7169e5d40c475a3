// Scheduled pruning, so tables that every request appends to stay bounded: used, revoked and expired refresh
// tokens (one client refreshing in a loop added 143 rows/s, kept for 7 days), Idempotency-Keys past their
// 24 h window, and outbox rows delivered more than 24 h ago (every order and status change adds one; the
// notification itself stays). Every PRUNE_INTERVAL_SECONDS; each target on its own: one that fails (a lock or
// a statement timeout on its table, a broken table) is logged and tried again at the next pass, and the others
// still run.
import type { Logger } from '../logger';
import { createPeriodic } from './periodic';

export interface PruneTarget {
  name: string;
  /** Deletes what is due as of `now`, a batch at a time; no batch starts once `signal` is aborted. */
  prune(now: Date, signal?: AbortSignal): Promise<number>;
}

export function createPruner(deps: {
  logger: Logger;
  intervalSeconds: number;
  /** The first pass after start: at a random moment within this many seconds (null: one interval). */
  firstPassWithinSeconds: number | null;
  targets: PruneTarget[];
}) {
  const log = deps.logger.child({ component: 'Pruner' });

  /**
   * One pass over the targets: the rows each deleted (a target that failed is logged and left out). With
   * `signal` aborted (stop()) it ends after the batch under way.
   */
  async function pruneOnce(signal?: AbortSignal): Promise<Record<string, number>> {
    const now = new Date();
    const deleted: Record<string, number> = {};
    for (const target of deps.targets) {
      if (signal?.aborted) break;
      try {
        deleted[target.name] = await target.prune(now, signal);
      } catch (err) {
        log.error({ err }, `Pruning ${target.name} failed; trying again at the next interval`);
      }
    }
    if (Object.values(deleted).some((n) => n > 0)) log.info({ deleted }, 'Pruned expired rows');
    return deleted;
  }

  const schedule = createPeriodic({
    intervalSeconds: deps.intervalSeconds,
    firstPassWithinSeconds: deps.firstPassWithinSeconds,
    run: pruneOnce,
    log,
    failure: 'Pruning failed; trying again at the next interval',
  });
  return { pruneOnce, start: schedule.start, stop: schedule.stop };
}

export type Pruner = ReturnType<typeof createPruner>;
