import type { Deps } from '../services';

import type { Readiness } from './health-schemas';

export type ReadyReport = Readiness;

export function createHealthService({ db }: Pick<Deps, 'db'>) {
  let migrationsApplied = false; // once applied they stay applied while this process runs

  return {
    async ready(): Promise<ReadyReport> {
      try {
        await db.raw('select 1');
      } catch {
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
