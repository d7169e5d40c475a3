// The schedule of background passes (lib/maintenance/periodic.ts) with real timers and a 50 ms interval: one
// chain whatever the order of start() and stop() calls (never two passes at once, never a pass after stop()),
// also when a pass is still under way across a stop() and a start(). A pass is held open until the test lets
// it end. The first pass comes within `firstPassWithinSeconds` of start(), not after a whole interval.
import test from 'ava';
import { createLogger } from '../../lib/logger';
import { createPeriodic, firstPassDelayMs } from '../../lib/maintenance/periodic';
import { LogCollector } from '../helpers/harness';

const INTERVAL_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A schedule whose passes are recorded; the first pass waits for `release()`, the others end at once. */
function recorded() {
  const logs = new LogCollector();
  const log = createLogger({ level: 'info', format: 'line', out: logs });
  const passes: Array<{ start: number; end?: number }> = [];
  let active = 0;
  let maxActive = 0;
  let release!: () => void;
  const firstHeld = new Promise<void>((resolve) => (release = resolve));
  const schedule = createPeriodic({
    intervalSeconds: INTERVAL_MS / 1000,
    log,
    failure: 'Pass failed',
    async run() {
      const pass: { start: number; end?: number } = { start: Date.now() };
      passes.push(pass);
      active++;
      maxActive = Math.max(maxActive, active);
      if (passes.length === 1) await firstHeld;
      active--;
      pass.end = Date.now();
    },
  });
  return {
    schedule,
    passes,
    logs,
    release: () => release(),
    maxActive: () => maxActive,
    async untilPasses(n: number) {
      const deadline = Date.now() + 5000;
      while (passes.length < n) {
        if (Date.now() > deadline) throw new Error(`${n} passes not reached (${passes.length})`);
        await sleep(5);
      }
    },
  };
}

test('start() after stop() while a pass runs: one chain, never two passes at once, nothing after stop()', async (t) => {
  const r = recorded();
  r.schedule.start();
  await r.untilPasses(1);
  const stopping = r.schedule.stop();
  r.schedule.start(); // the pass is still under way
  await sleep(4 * INTERVAL_MS); // a second chain would start a pass now, beside the held one
  t.is(r.passes.length, 1, 'no pass while the first one is under way');
  r.release();
  await stopping;
  await r.untilPasses(4);
  t.is(r.maxActive(), 1);
  // One chain: each pass starts a full interval after the previous one ended.
  for (let i = 1; i < r.passes.length; i++) {
    const gap = r.passes[i].start - r.passes[i - 1].end!;
    t.true(gap >= INTERVAL_MS - 5, `pass ${i} started ${gap} ms after the previous one ended`);
  }
  await r.schedule.stop();
  const count = r.passes.length;
  await sleep(4 * INTERVAL_MS);
  t.is(r.passes.length, count, 'no pass after stop()');
});

test('a pass that ends after stop() schedules nothing', async (t) => {
  const r = recorded();
  r.schedule.start();
  await r.untilPasses(1);
  const stopping = r.schedule.stop();
  r.release();
  await stopping;
  await sleep(4 * INTERVAL_MS);
  t.is(r.passes.length, 1);
});

test('stop(), start(), stop() while a pass runs: nothing runs afterwards; start() again resumes one chain', async (t) => {
  const r = recorded();
  r.schedule.start();
  await r.untilPasses(1);
  const first = r.schedule.stop();
  r.schedule.start();
  const second = r.schedule.stop();
  r.release();
  await Promise.all([first, second]);
  await sleep(4 * INTERVAL_MS);
  t.is(r.passes.length, 1);

  r.schedule.start();
  r.schedule.start(); // a second start() of a started schedule changes nothing
  await r.untilPasses(4);
  await r.schedule.stop();
  t.is(r.maxActive(), 1);
  for (let i = 2; i < r.passes.length; i++) {
    t.true(r.passes[i].start - r.passes[i - 1].end! >= INTERVAL_MS - 5);
  }
});

test('a failed pass is logged and the schedule goes on', async (t) => {
  const logs = new LogCollector();
  let passes = 0;
  const schedule = createPeriodic({
    intervalSeconds: INTERVAL_MS / 1000,
    log: createLogger({ level: 'info', format: 'line', out: logs }).child({ component: 'Test' }),
    failure: 'Pass failed; trying again at the next interval',
    async run() {
      passes++;
      if (passes === 1) throw new Error('first pass breaks');
    },
  });
  schedule.start();
  const deadline = Date.now() + 5000;
  while (passes < 3 && Date.now() < deadline) await sleep(5);
  await schedule.stop();
  t.true(passes >= 3);
  t.is(logs.lines.filter((line) => line.includes('Pass failed; trying again')).length, 1);
  t.regex(
    logs.text,
    /\[ERROR\] \[-\] \[Test\] Pass failed; trying again at the next interval\nError: first pass breaks/,
  );
});

test('the first pass: random within firstPassWithinSeconds and the interval; a full interval when null', (t) => {
  t.is(firstPassDelayMs(600, null), 600_000);
  t.is(
    firstPassDelayMs(600, 60, () => 0),
    0,
  );
  t.is(
    firstPassDelayMs(600, 60, () => 0.5),
    30_000,
  );
  t.is(
    firstPassDelayMs(600, 60, () => 0.9999),
    59_994,
  );
  t.is(
    firstPassDelayMs(30, 60, () => 0.5),
    15_000,
    'never later than one interval',
  );
  t.is(
    firstPassDelayMs(600, 0, () => 0.7),
    0,
  );
  for (let i = 0; i < 1000; i++) {
    const ms = firstPassDelayMs(600, 60);
    t.true(ms >= 0 && ms < 60_000);
  }
});

test('the first pass runs soon after start() (and after a start() following a stop()), the next one an interval later', async (t) => {
  const logs = new LogCollector();
  const starts: number[] = [];
  const schedule = createPeriodic({
    intervalSeconds: 3600,
    firstPassWithinSeconds: 0.1,
    log: createLogger({ level: 'info', format: 'line', out: logs }),
    failure: 'Pass failed',
    async run() {
      starts.push(Date.now());
    },
  });
  for (let round = 1; round <= 2; round++) {
    const started = Date.now();
    schedule.start();
    while (starts.length < round && Date.now() - started < 2000) await sleep(5);
    t.is(starts.length, round, `round ${round}: a pass soon after start()`);
    t.true(starts[round - 1] - started < 1000, `round ${round}: after ${starts[round - 1] - started} ms`);
    await sleep(300);
    t.is(starts.length, round, 'the next pass waits a whole interval');
    await schedule.stop();
  }
});
