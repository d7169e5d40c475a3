// One schedule for background passes (pruning, order expiry): a pass every `intervalSeconds` after the previous
// one ended (never two at once in a process), a failed pass logged and the next one tried at the next interval,
// and a stop() that asks a pass in progress to end after the batch or order under way (its AbortSignal: a
// pass over a large backlog would otherwise hold shutdown for minutes) and waits for that (the pool closes
// afterwards). What a stopped pass left is for the next one. The first pass after start() runs at a random
// moment within `firstPassWithinSeconds` (at most one interval): an instance restarted more often than the
// interval still runs passes, and instances started together do not all run theirs at once. Timers are unref'd.
import type { Logger } from '../logger';

/** The wait before the first pass: random within `withinSeconds` and the interval; a full interval if null. */
export function firstPassDelayMs(
  intervalSeconds: number,
  withinSeconds: number | null,
  random: () => number = Math.random,
): number {
  if (withinSeconds === null) return intervalSeconds * 1000;
  return Math.floor(random() * Math.min(withinSeconds, intervalSeconds) * 1000);
}

export function createPeriodic(deps: {
  intervalSeconds: number;
  /** The first pass runs at a random moment within this many seconds of start(); null or unset: one interval. */
  firstPassWithinSeconds?: number | null;
  /** One pass; it checks `signal` between its batches (or orders) and ends early once it is aborted. */
  run: (signal: AbortSignal) => Promise<unknown>;
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
  /** Aborted by stop(): the pass under way ends after its current batch. */
  let current: AbortController | null = null;

  const schedule = (ms: number) => {
    timer = setTimeout(tick, ms).unref();
  };
  const tick = () => {
    timer = null;
    const controller = new AbortController();
    current = controller;
    running = deps
      .run(controller.signal)
      .then(
        () => undefined,
        (err: unknown) => deps.log.error({ err }, deps.failure),
      )
      .finally(() => {
        running = null;
        current = null;
        if (started) schedule(deps.intervalSeconds * 1000);
      });
  };

  return {
    start(): void {
      if (started) return;
      started = true;
      if (!running) schedule(firstPassDelayMs(deps.intervalSeconds, deps.firstPassWithinSeconds ?? null));
    },
    async stop(): Promise<void> {
      started = false;
      if (timer) clearTimeout(timer);
      timer = null;
      current?.abort();
      await running;
    },
  };
}
