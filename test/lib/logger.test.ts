import test from 'ava';
import { createLogger, formatLine, scrub } from '../../lib/logger';
import { LogCollector } from '../helpers/harness';
import { currentRequestId, runWithContext } from '../../lib/request-context';

const LINE =
  /^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\] \[(INFO|WARN|ERROR|DEBUG)\] \[[^\]]+\] \[\w+\] .+$/;

test('formatLine follows [timestamp] [level] [requestId] [class] message', (t) => {
  const line = formatLine({
    time: new Date('2026-11-22T10:41:14.123Z'),
    level: 30,
    msg: 'hello',
    component: 'Thing',
    requestId: 'abc',
  });
  t.is(line, '[2026-11-22T10:41:14.123Z] [INFO] [abc] [Thing] hello');
  t.is(
    formatLine({ time: '2026-11-22T10:41:14.123Z', level: 50, msg: 'x' }),
    '[2026-11-22T10:41:14.123Z] [ERROR] [-] [App] x',
  );
});

test('log lines carry the request id of the AsyncLocalStorage context, also from async work', async (t) => {
  const out = new LogCollector();
  const log = createLogger({ level: 'info', format: 'line', out }).child({ component: 'Worker' });
  await runWithContext({ requestId: 'req-42' }, async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    setImmediate(() => log.info('later'));
    await new Promise((resolve) => setTimeout(resolve, 5));
  });
  log.info('outside');
  t.is(out.lines.length, 2);
  t.regex(out.lines[0], LINE);
  t.true(out.lines[0].endsWith('[req-42] [Worker] later'));
  t.true(out.lines[1].endsWith('[-] [Worker] outside'));
  t.is(currentRequestId(), undefined);
});

test('secrets in log fields are redacted in both formats', (t) => {
  for (const format of ['line', 'json'] as const) {
    const out = new LogCollector();
    const log = createLogger({ level: 'info', format, out });
    log.info(
      {
        password: 'hunter2-secret',
        body: { refreshToken: 'rt-secret', name: 'ok' },
        authorization: 'Bearer abc.def',
      },
      'fields',
    );
    t.false(out.text.includes('hunter2-secret'));
    t.false(out.text.includes('rt-secret'));
    t.false(out.text.includes('abc.def'));
    if (format === 'json') {
      const record = JSON.parse(out.lines[0]);
      t.is(record.password, '[REDACTED]');
      t.deepEqual(record.body, { refreshToken: '[REDACTED]', name: 'ok' });
      t.is(record.msg, 'fields');
    }
  }
  t.deepEqual(scrub({ a: [{ accessToken: 'x' }], passwordHash: 'y', n: 1 }), {
    a: [{ accessToken: '[REDACTED]' }],
    passwordHash: '[REDACTED]',
    n: 1,
  });
});

test('LOG_FORMAT=json writes raw bunyan records with the request id', (t) => {
  const out = new LogCollector();
  const log = createLogger({ level: 'info', format: 'json', out }).child({ component: 'Thing' });
  runWithContext({ requestId: 'rid-1' }, () => log.warn('careful'));
  const record = JSON.parse(out.lines[0]);
  t.like(record, { level: 40, msg: 'careful', component: 'Thing', requestId: 'rid-1', name: 'marketplace' });
});

test('the level filters lines', (t) => {
  const out = new LogCollector();
  const log = createLogger({ level: 'warn', format: 'line', out });
  log.info('quiet');
  log.error('loud');
  t.is(out.lines.length, 1);
  t.regex(out.lines[0], /\[ERROR\] \[-\] \[App\] loud$/);
});
