// The database a benchmark runs on: `--db mysql|sqlite` (or `--db=...`), else BENCH_DB, else mysql.

export type BenchDb = 'mysql' | 'sqlite';

/** A `--db` value, checked. */
export function dbName(value: string | undefined): BenchDb {
  if (value !== 'mysql' && value !== 'sqlite') throw new Error('--db must be mysql or sqlite');
  return value;
}

export function dbFlag(argv: string[] = process.argv.slice(2)): BenchDb {
  const at = argv.findIndex((arg) => arg === '--db' || arg.startsWith('--db='));
  return dbName(
    at < 0 ? (process.env.BENCH_DB ?? 'mysql') : argv[at].includes('=') ? argv[at].slice(5) : argv[at + 1],
  );
}
