// Knex CLI configuration, derived from the one config module, for reading the migration state:
//   node --import tsx node_modules/knex/bin/cli.js migrate:status --knexfile knexfile.ts
// Migrate with `npm run db:migrate` / `db:rollback`, not the CLI: only they hold the migration mark that
// `npm run db:unlock` checks (lib/migration-mark.ts).
import { loadConfig } from './lib/config';
import { knexConfig } from './lib/db';

export default knexConfig(loadConfig().database);
