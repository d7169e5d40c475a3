// better-sqlite3 used directly (it ships no types), for connections of a test's own that hold locks and
// snapshots synchronously beside the service's.
import { createRequire } from 'node:module';

export interface RawSqlite {
  exec(sql: string): void;
  pragma(sql: string): unknown;
  prepare(sql: string): { run(): unknown; get(): unknown };
  close(): void;
}

export const RawDatabase = createRequire(import.meta.url)('better-sqlite3') as new (
  file: string,
  options?: { timeout?: number },
) => RawSqlite;
