import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  findTemporalCli,
  findTemporalTestServer,
  startEmbeddedPostgres,
  startTemporalDevServer,
} from '@activity-core/dev-services';
import { runMigrations } from '@activity-core/db';
import { bundleWorkflows } from '@activity-core/temporal/worker';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresPort: number;
    templateDatabase: string;
    temporalAddress: string;
    temporalCli: string;
    /** Temporal's time-skipping test server for the workflow tests; '' when not installed (they fail saying so). */
    temporalTestServer: string;
    workflowBundlePath: string;
  }
}

export const TEMPLATE_DATABASE = 'activity_core_template';

/**
 * One real Postgres and one real Temporal dev server for the whole run. Each
 * test file clones a migrated template database and uses its own task queue,
 * so files never see each other's rows or workflows.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = process.cwd();
  const cli = findTemporalCli(root, process.env.TEMPORAL_CLI_PATH, process.env.PATH);
  if (cli === undefined)
    throw new Error('Temporal CLI not found: run `npm test` (it installs it) or put `temporal` on PATH');
  const scratch = await mkdtemp(join(tmpdir(), 'activity-core-test-'));
  const { chmod } = await import('node:fs/promises');
  await chmod(scratch, 0o755);

  const [postgres, temporal, bundle] = await Promise.all([
    startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
    startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }),
    bundleWorkflows(),
  ]);
  const bundlePath = join(scratch, 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);

  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  await admin.end();
  await runMigrations(postgres.urlFor(TEMPLATE_DATABASE));

  project.provide('postgresPort', postgres.port);
  project.provide('templateDatabase', TEMPLATE_DATABASE);
  project.provide('temporalAddress', temporal.address);
  project.provide('temporalCli', cli);
  project.provide(
    'temporalTestServer',
    findTemporalTestServer(root, process.env.TEMPORAL_TEST_SERVER_PATH, process.env.PATH) ?? '',
  );
  project.provide('workflowBundlePath', bundlePath);

  return async () => {
    await temporal.stop();
    await postgres.stop();
    await rm(scratch, { recursive: true, force: true });
  };
}
