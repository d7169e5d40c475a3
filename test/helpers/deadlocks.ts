// Real InnoDB deadlocks on demand (MariaDB only), for the tests of a service's retry at its call site. The
// test's rival transaction runs on its own connection: it takes a first lock, waits until the service's
// transaction waits for that lock while holding a lock of its own, then asks for that one. The cycle is
// real and InnoDB rolls back the lighter transaction (fewer undo records and locks); the rival writes
// ballast rows first, so the service's side is always the victim.
import knexFactory, { type Knex } from 'knex';
import type { Config } from '../../lib/config';
import { knexConfig } from '../../lib/db';

const BALLAST = 'deadlock_ballast';
const BALLAST_ROWS = 200;

export interface Rival {
  trx: Knex.Transaction;
  /** Resolves once another transaction waits for a lock the rival holds; rejects if `work` ends first. */
  blocks(work: Promise<unknown>): Promise<void>;
  /** Rolls the rival back (if still open) and closes its connections. */
  end(): Promise<void>;
}

/** Opens the rival transaction on new connections of its own, already heavier than the service's. */
export async function openRival(database: Config['database']): Promise<Rival> {
  // Its own pool: a new connection has a new thread id, so the server's cached lock tables cannot show an
  // earlier rival's waits as this one's.
  const db = knexFactory({ ...knexConfig(database), pool: { min: 0, max: 2 } });
  if (!(await db.schema.hasTable(BALLAST))) {
    await db.schema.createTable(BALLAST, (t) => {
      t.increments('id');
      t.integer('n').notNullable();
    });
  }
  const trx = await db.transaction();
  await trx(BALLAST).insert(Array.from({ length: BALLAST_ROWS }, (_, n) => ({ n })));
  const [[{ thread }]] = await trx.raw('SELECT CONNECTION_ID() AS thread');
  return {
    trx,
    async blocks(work) {
      let ended = false;
      void work.finally(() => (ended = true)).catch(() => {});
      // Who waits for whom, server-wide; only waits for the rival count. InnoDB serves these tables from a
      // cache it refreshes only when it was last read over 100 ms ago: polled faster, it never changes.
      const waiting = async () => {
        const [rows] = await db.raw(
          `SELECT COUNT(*) AS n FROM information_schema.innodb_lock_waits w
             JOIN information_schema.innodb_trx rival ON rival.trx_id = w.blocking_trx_id
            WHERE rival.trx_mysql_thread_id = ?`,
          [thread],
        );
        return Number(rows[0].n) > 0;
      };
      while (!(await waiting())) {
        if (ended) {
          const result = await work.catch((err: unknown) => err);
          throw new Error(`the service finished without waiting for the rival: ${String(result)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    },
    async end() {
      try {
        if (!trx.isCompleted()) await trx.rollback();
      } finally {
        await db.destroy();
      }
    },
  };
}
