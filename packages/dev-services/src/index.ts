export { REQUIRED_SEARCH_ATTRIBUTES } from './search-attributes';
export { freePort, waitForPort } from './ports';
export {
  PROJECT_TEMPORAL_CLI,
  findTemporalCli,
  startTemporalDevServer,
  type TemporalDevServer,
  type TemporalDevServerOptions,
} from './temporal-dev-server';
export { startEmbeddedPostgres, type EmbeddedPostgresOptions, type RunningPostgres } from './embedded-postgres';
