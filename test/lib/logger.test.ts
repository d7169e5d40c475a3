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

test('database errors are logged with their code and driver message, never the SQL or its bound values', async (t) => {
  const { createTestDatabase, testConfig } = await import('../helpers/harness');
  const { createDb, isUniqueViolation } = await import('../../lib/db');
  const { Model } = await import('objection');
  const database = await createTestDatabase();
  const db = createDb(testConfig(database.env).database);
  try {
    await db.migrate.latest();
    const at = new Date();
    const row = {
      email: 'e@x.test',
      password_hash: '$2b$04$SECRETHASHVALUE',
      name: 'n',
      phone: 'p',
      role: 'BUYER',
      created_at: at,
      updated_at: at,
    };
    await db('members').insert(row);
    const knexErr = await db('members')
      .insert(row)
      .catch((err: unknown) => err);
    class Members extends Model {
      static tableName = 'members';
    }
    const objectionErr = await Members.query(db)
      .insert(row)
      .catch((err: unknown) => err);
    for (const err of [knexErr, objectionErr]) {
      t.true(isUniqueViolation(err), 'recognised whether or not Objection wrapped it');
      const out = new LogCollector();
      createLogger({ level: 'info', format: 'json', out }).error({ err }, 'insert failed');
      t.false(out.text.includes('SECRETHASHVALUE'), out.text);
      t.false(/insert into/i.test(out.text), out.text);
      t.regex(JSON.parse(out.lines[0]).err.message, /^(ER_DUP_ENTRY|SQLITE_CONSTRAINT_UNIQUE): /);
    }
  } finally {
    await db.destroy();
    await database.drop();
  }
});
