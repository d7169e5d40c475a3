// One schedule for background passes (pruning, order expiry): a pass every `intervalSeconds` after the previous
// one ended (never two at once in a process), a failed pass logged and the next one tried at the next interval,
// and a stop() that waits for a pass in progress (the pool closes afterwards). Timers are unref'd.
import type { Logger } from '../logger';

export function createPeriodic(deps: {
  intervalSeconds: number;
  run: () => Promise<unknown>;
  log: Logger;
  /** Logged (error) when a pass fails. */
  failure: string;
}) {
  // One chain at most: a timer is set only while started, by start() when no pass is under way, or by the
  // pass that just ended; so a start() right after a stop() whose pass is still running leaves the next
  // timer to that pass, and a pass ending after stop() sets none.
  let started = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  const schedule = () => {
    timer = setTimeout(tick, deps.intervalSeconds * 1000).unref();
  };
  const tick = () => {
    timer = null;
    running = deps
      .run()
      .then(
        () => undefined,
        (err: unknown) => deps.log.error({ err }, deps.failure),
      )
      .finally(() => {
        running = null;
        if (started) schedule();
      });
  };

  return {
    start(): void {
      if (started) return;
      started = true;
      if (!running) schedule();
    },
    async stop(): Promise<void> {
      started = false;
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}
