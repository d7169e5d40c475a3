// Knex CLI configuration, derived from the one config module:
//   node --import tsx node_modules/knex/bin/cli.js migrate:latest --knexfile knexfile.ts
// (`npm run db:migrate` does the same from code.)
import { loadConfig } from './lib/config';
import { knexConfig } from './lib/db';

export default knexConfig(loadConfig().database);
