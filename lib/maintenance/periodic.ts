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
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  const tick = () => {
    running = deps.run().then(
      () => undefined,
      (err: unknown) => deps.log.error({ err }, deps.failure),
    );
    void running.finally(() => {
      running = null;
      if (timer) timer = setTimeout(tick, deps.intervalSeconds * 1000).unref();
    });
  };

  return {
    start(): void {
      if (!timer) timer = setTimeout(tick, deps.intervalSeconds * 1000).unref();
    },
    async stop(): Promise<void> {
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}
