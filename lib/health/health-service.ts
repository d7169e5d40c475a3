import type { Db } from '../db';
import type { Readiness } from './health-schemas';

export type ReadyReport = Readiness;

// A probe of a black-holed database would otherwise wait for the connect or query timeout; readiness
// must turn at once so the load balancer stops sending traffic here.
export const READY_PROBE_TIMEOUT_MS = 1_000;

/** `db`: a pool of its own (one connection), so a probe never waits behind the service's busy pool. */
export function createHealthService({ db }: { db: Db }) {
  let migrationsApplied = false; // once applied they stay applied while this process runs

  async function databaseAnswers(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), READY_PROBE_TIMEOUT_MS);
    });
    try {
      // the probe itself stays bounded by the pool's own timeouts and frees its connection then
      return await Promise.race([db.raw('select 1').then(() => true), late]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    async ready(): Promise<ReadyReport> {
      if (!(await databaseAnswers())) {
        return { status: 'DOWN', checks: { database: 'DOWN', migrations: 'UNKNOWN' } };
      }
      if (!migrationsApplied) {
        try {
          const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
          migrationsApplied = pending.length === 0;
        } catch {
          migrationsApplied = false;
        }
      }
      return migrationsApplied
        ? { status: 'UP', checks: { database: 'UP', migrations: 'UP' } }
        : { status: 'DOWN', checks: { database: 'UP', migrations: 'PENDING' } };
    },
  };
}
