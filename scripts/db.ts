// `npm run db:migrate | db:rollback | db:seed | db:unlock`: the knex migrator and seeder run from code (the knex CLI
// does not know tsx), against the database the config points at.
import { ConfigError, loadConfig } from '../lib/config';
import { createDb } from '../lib/db';
import { liveMigrator, migrateLatest, rollback } from '../lib/migration-mark';
import { seedDemo } from '../seeds/01_demo';

const command = process.argv[2];
try {
  const config = loadConfig();
  const db = createDb(config.database);
  try {
    if (command === 'migrate') {
      const [, applied] = await migrateLatest(db);
      console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Already up to date');
    } else if (command === 'rollback') {
      const [, reverted] = await rollback(db, process.argv.includes('--all'));
      console.log(reverted.length ? `Rolled back: ${reverted.join(', ')}` : 'Nothing to roll back');
    } else if (command === 'unlock') {
      // A migrator that stopped mid-way leaves knex's lock taken, and every start then waits and fails. A live
      // one must keep it (MySQL/MariaDB know who runs: lib/migration-mark.ts); `--force` clears it regardless.
      const migrator = process.argv.includes('--force') ? null : await liveMigrator(db);
      if (migrator !== null) {
        console.error(
          `A migrator is running (database connection ${migrator}): its lock stays. ` +
            'Wait for it, or clear the lock anyway with `npm run db:unlock -- --force`',
        );
        process.exitCode = 1;
      } else {
        await db.migrate.forceFreeMigrationsLock();
        console.log('Migration lock cleared');
      }
    } else if (command === 'seed') {
      await seedDemo(db, config);
      console.log('Seeded demo accounts, categories and products');
    } else {
      console.error('usage: db.ts migrate | rollback [--all] | seed | unlock [--force]');
      process.exitCode = 2;
    }
  } finally {
    await db.destroy();
  }
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : (err as Error).message);
  process.exitCode = 1;
}
