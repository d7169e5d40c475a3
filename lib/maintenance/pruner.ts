// Scheduled pruning, so tables that every request appends to stay bounded: used, revoked and expired refresh
// tokens (one client refreshing in a loop added 143 rows/s, kept for 7 days) and Idempotency-Keys past their
// 24 h window. Every PRUNE_INTERVAL_SECONDS; a failed pass is logged and the next one tries again.
import type { Logger } from '../logger';

export interface PruneTarget {
  name: string;
  prune(now: Date): Promise<number>;
}

export function createPruner(deps: { logger: Logger; intervalSeconds: number; targets: PruneTarget[] }) {
  const log = deps.logger.child({ component: 'Pruner' });
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  async function pruneOnce(): Promise<Record<string, number>> {
    const now = new Date();
    const deleted: Record<string, number> = {};
    for (const target of deps.targets) deleted[target.name] = await target.prune(now);
    if (Object.values(deleted).some((n) => n > 0)) log.info({ deleted }, 'Pruned expired rows');
    return deleted;
  }

  const tick = () => {
    running = pruneOnce().then(
      () => undefined,
      (err: unknown) => log.error({ err }, 'Pruning failed; trying again at the next interval'),
    );
    void running.finally(() => {
      running = null;
      if (timer) timer = setTimeout(tick, deps.intervalSeconds * 1000).unref();
    });
  };

  return {
    pruneOnce,
    start(): void {
      if (!timer) timer = setTimeout(tick, deps.intervalSeconds * 1000).unref();
    },
    /** Stops the schedule and waits for a pass in progress (the pool closes afterwards). */
    async stop(): Promise<void> {
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}

export type Pruner = ReturnType<typeof createPruner>;
