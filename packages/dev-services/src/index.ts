export { REQUIRED_SEARCH_ATTRIBUTES } from './search-attributes';
export { freePort, waitForPort } from './ports';
export {
  DEV_SERVER_DYNAMIC_CONFIG,
  PROJECT_TEMPORAL_CLI,
  findTemporalCli,
  startTemporalDevServer,
  type TemporalDevServer,
  type TemporalDevServerOptions,
} from './temporal-dev-server';
export { PROJECT_TEMPORAL_TEST_SERVER, findTemporalTestServer } from './temporal-test-server';
export { startEmbeddedPostgres, type EmbeddedPostgresOptions, type RunningPostgres } from './embedded-postgres';
export {
  DEFAULT_ECHO_PORT,
  ECHO_BODY_LIMIT_BYTES,
  startEchoServer,
  type EchoAnswer,
  type EchoServer,
} from './echo-server';
export {
  entryPointArgs,
  killHard,
  outputReady,
  spawnStackProcess,
  stopGracefully,
  type EntryPoint,
  type SpawnStackProcessOptions,
  type StackProcess,
} from './stack-processes';
