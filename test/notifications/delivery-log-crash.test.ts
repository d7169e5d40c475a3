// A notification's delivery log line survives a crash right after the delivery's COMMIT (API.md: delivery is at
// least once, also across a crash, and writes a log line): the line is written inside the delivery's transaction,
// before the COMMIT, so the process killed the moment the COMMIT is answered has written it already.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { writeOutbox } from '../../lib/notifications/outbox';
import { createMember } from '../helpers/factories';
import { createTestDatabase, startTestApp } from '../helpers/harness';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs deliver-and-die.ts on the database; resolves with its output once it is gone, and the signal that ended it. */
function deliverAndDie(env: Record<string, string>): Promise<{ output: string; signal: string | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/notifications/deliver-and-die.ts'], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('close', (_code, signal) => {
      clearTimeout(timer);
      resolve({ output: chunks.join(''), signal });
    }),
  );
}

test('killed the moment the delivery COMMIT is answered: the row is delivered and its line was written', async (t) => {
  const database = await createTestDatabase();
  const app = await startTestApp({ database });
  try {
    await app.bundle.services.dispatcher.stop(); // the child delivers
    const seller = await createMember(app, 'SELLER');
    await app.db.transaction((trx) =>
      writeOutbox(
        trx,
        [
          {
            type: 'OrderCreated',
            recipientId: seller.id,
            payload: { sellerId: seller.id, orderId: 7100, orderNumber: 'N-7100' },
          },
        ],
        new Date(),
        'crash-line-1',
      ),
    );
    const row = await app.db('notification_outbox').where('recipient_id', seller.id).first('id');

    const { output, signal } = await deliverAndDie(database.env);
    t.is(signal, 'SIGKILL', output);
    const delivered = await app.db('notification_outbox').where('id', row.id).first('delivered_at');
    t.truthy(delivered.delivered_at, 'the COMMIT applied before the process died');
    t.is((await app.db('notifications').where('outbox_id', row.id)).length, 1);
    t.regex(
      output,
      new RegExp(
        `\\[crash-line-1\\] \\[NotificationDispatcher\\] Delivered OrderCreated for order 7100 to member ${seller.id} \\(outbox ${row.id}\\)`,
      ),
    );
  } finally {
    await app.close();
    await database.drop();
  }
});
