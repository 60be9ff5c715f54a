/**
 * The whole stack in this process, for benchmarks that measure the API and a
 * run end to end without process boundaries: its own Temporal dev server and
 * embedded Postgres (nothing else needs to run), migrations, the API on a
 * loopback port and one worker. `stop()` ends all of it and removes its files.
 * Benchmarks that spawn the built entry points use @activity-core/dev-services'
 * stack-processes instead.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@activity-core/config';
import { runMigrations } from '@activity-core/db';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  findTemporalCli,
  startEmbeddedPostgres,
  startTemporalDevServer,
} from '@activity-core/dev-services';
import { bundleWorkflows } from '@activity-core/temporal/worker';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pg from 'pg';
import { createApiApp } from '../apps/api/src/app';
import { createWorkerApp } from '../apps/worker/src/worker-app';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

export interface InProcessStack {
  /** The API's base URL, e.g. `http://127.0.0.1:40123`. */
  address: string;
  databaseUrl: string;
  /** The Temporal dev server's gRPC address, for a client of the benchmark's own. */
  temporalAddress: string;
  stop(): Promise<void>;
}

/** `env` adds to (or overrides) the configuration; RATE_LIMIT_MAX=0 by default: a benchmark sends from one address. */
export async function startInProcessStack(env: Record<string, string> = {}): Promise<InProcessStack> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const scratch = await mkdtemp(join(tmpdir(), 'activity-core-bench-'));
  await chmod(scratch, 0o755);
  const cli = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
  if (cli === undefined) throw new Error('Temporal CLI not found; run npm test or npm start once to install it');
  const [postgres, temporal, bundle] = await Promise.all([
    startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
    startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }),
    bundleWorkflows(),
  ]);
  const stopServers = async (): Promise<void> => {
    await temporal.stop();
    await postgres.stop();
    await rm(scratch, { recursive: true, force: true });
  };
  try {
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE bench');
    await admin.end();
    const databaseUrl = postgres.urlFor('bench');
    await runMigrations(databaseUrl);
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      LOG_LEVEL: 'silent',
      MIGRATE_ON_START: 'false',
      PORT: '0',
      RATE_LIMIT_MAX: '0',
      ...env,
    });
    const api = await createApiApp(config, { logger: false });
    const worker = await createWorkerApp(config, { logger: quiet, workflowBundle: bundle });
    void worker.run();
    const address = await api.server.listen({ host: '127.0.0.1', port: 0 });
    return {
      address,
      databaseUrl,
      temporalAddress: temporal.address,
      stop: async () => {
        try {
          await worker.close();
          await api.close();
        } finally {
          await stopServers();
        }
      },
    };
  } catch (error) {
    await stopServers();
    throw error;
  }
}
