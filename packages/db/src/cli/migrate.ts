import { loadConfig } from '@activity-core/config';
import { runMigrations } from '../migrate';

const config = loadConfig(process.env);
await runMigrations(config.databaseUrl);
console.log('migrations applied');
