// The database a benchmark runs on: `--db mysql|sqlite` (or `--db=...`), else BENCH_DB, else mysql.

export function dbFlag(argv: string[] = process.argv.slice(2)): 'mysql' | 'sqlite' {
  const at = argv.findIndex((arg) => arg === '--db' || arg.startsWith('--db='));
  const value =
    at < 0 ? (process.env.BENCH_DB ?? 'mysql') : argv[at].includes('=') ? argv[at].slice(5) : argv[at + 1];
  if (value !== 'mysql' && value !== 'sqlite') throw new Error('--db must be mysql or sqlite');
  return value;
}
