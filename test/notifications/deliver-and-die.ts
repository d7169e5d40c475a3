// A crash right after a delivery's COMMIT, run as a child process by delivery-log-crash.test.ts: the dispatcher
// delivers the outbox of the database the environment names, its log lines on stdout, and the process kills
// itself (SIGKILL) the moment the database has answered the delivery's COMMIT, before any code after it runs.
import { createDb } from '../../lib/db';
import { createLogger } from '../../lib/logger';
import { createNotificationDispatcher } from '../../lib/notifications/dispatcher';
import { testConfig } from '../helpers/harness';

const db = createDb(testConfig(process.env as Record<string, string>).database);
let delivering = false;
db.on('query', (query: { sql: string }) => {
  if (/^update [`"]notification_outbox[`"] set [`"]delivered_at[`"]/i.test(query.sql)) delivering = true;
});
// Every statement, the transaction's own included, goes through the dialect's _query.
const dialect = Object.getPrototypeOf(db.client) as {
  _query(connection: unknown, query: { sql: string }): Promise<unknown>;
};
const send = dialect._query;
dialect._query = async function (this: unknown, connection, query) {
  const answer = await send.call(this, connection, query);
  if (delivering && /^commit/i.test(query.sql)) process.kill(process.pid, 'SIGKILL');
  return answer;
};
createNotificationDispatcher({ db, logger: createLogger({ level: 'info', format: 'line' }) }).start();
