// The background passes' stop behaviour that test/maintenance/periodic.test.ts and pruner.test.ts leave open:
// stop() resolves only once the pass under way has ended (the pool closes after it), a stop() before the first
// pass means no pass at all, stop() aborts the running pass's signal, and a pruning pass stopped during one
// target starts no further target. The schedule runs with real timers; the targets are plain functions.
import test from 'ava';
import { createLogger } from '../../lib/logger';
import { createPeriodic } from '../../lib/maintenance/periodic';
import { createPruner } from '../../lib/maintenance/pruner';
import { LogCollector } from '../helpers/harness';
import { until } from '../helpers/until';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quietLog = () => createLogger({ level: 'fatal', format: 'line', out: new LogCollector() });

test('stop() resolves only after the pass under way has ended, and aborts its signal', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let signalSeen: AbortSignal | undefined;
  let ended = false;
  const schedule = createPeriodic({
    intervalSeconds: 3600,
    firstPassWithinSeconds: 0,
    log: quietLog(),
    failure: 'Pass failed',
    async run(signal) {
      signalSeen = signal;
      await held;
      ended = true;
    },
  });
  schedule.start();
  await until(
    () => signalSeen !== undefined,
    5_000,
    () => 'the first pass did not start',
  );
  t.false(signalSeen!.aborted);
  let stopped = false;
  const stopping = schedule.stop().then(() => (stopped = true));
  t.true(signalSeen!.aborted, 'the pass is asked to end after its current batch');
  await sleep(100);
  t.false(stopped, 'stop() still waits for the pass');
  release();
  await stopping;
  t.true(ended, 'the pass had ended when stop() resolved');
});

test('stop() before the first pass came: no pass runs at all', async (t) => {
  let passes = 0;
  const schedule = createPeriodic({
    intervalSeconds: 0.05,
    firstPassWithinSeconds: 0.05,
    log: quietLog(),
    failure: 'Pass failed',
    async run() {
      passes++;
    },
  });
  schedule.start();
  await schedule.stop();
  await sleep(300); // six intervals
  t.is(passes, 0);
});

test('a pruning pass stopped during one target starts no further target; what the first deleted is reported', async (t) => {
  const controller = new AbortController();
  const called: string[] = [];
  const pruner = createPruner({
    logger: quietLog(),
    intervalSeconds: 3600,
    firstPassWithinSeconds: null,
    targets: [
      {
        name: 'first',
        async prune() {
          called.push('first');
          controller.abort(); // stop() arrives while this target runs its batch
          return 7;
        },
      },
      {
        name: 'second',
        async prune() {
          called.push('second');
          return 1;
        },
      },
    ],
  });
  t.deepEqual(await pruner.pruneOnce(controller.signal), { first: 7 });
  t.deepEqual(called, ['first']);
});

test('a pruning pass gives every target the same moment, and one that fails leaves the others', async (t) => {
  const logs = new LogCollector();
  const moments: Date[] = [];
  const pruner = createPruner({
    logger: createLogger({ level: 'info', format: 'line', out: logs }),
    intervalSeconds: 3600,
    firstPassWithinSeconds: null,
    targets: [
      {
        name: 'broken',
        async prune(now) {
          moments.push(now);
          throw new Error('table away');
        },
      },
      {
        name: 'working',
        async prune(now) {
          moments.push(now);
          return 2;
        },
      },
    ],
  });
  t.deepEqual(await pruner.pruneOnce(), { working: 2 });
  t.is(moments.length, 2);
  t.is(moments[0], moments[1]);
  t.regex(logs.text, /\[ERROR\] \[-\] \[Pruner\] Pruning broken failed; trying again at the next interval/);
  t.regex(logs.text, /Pruned expired rows/);
});
