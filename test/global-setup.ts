import { randomUUID } from 'node:crypto';
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
import { buildProduction } from '../scripts/build';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresPort: number;
    templateDatabase: string;
    temporalAddress: string;
    temporalCli: string;
    /** Temporal's time-skipping test server for the workflow tests; '' when not installed (they fail saying so). */
    temporalTestServer: string;
    workflowBundlePath: string;
    /** The production build (scripts/build.ts) made for this run; spawned API and worker processes run it. */
    productionBuild: string;
  }
}

export const TEMPLATE_DATABASE = 'activity_core_template';

interface Servers {
  postgresPort: number;
  temporalAddress: string;
  temporalCli: string;
  temporalTestServer: string;
  workflowBundlePath: string;
  productionBuild: string;
  stop(): Promise<void>;
}

/**
 * The servers are shared by every project that names this setup (the
 * CPU-bound and the wall-clock integration pools run at the same time): the
 * first project starts them, the last one to finish stops them. Kept on
 * globalThis because each project may load this module afresh.
 */
const shared = globalThis as typeof globalThis & {
  activityCoreTestServers?: { servers: Promise<Servers>; users: number };
};

/**
 * One real Postgres and one real Temporal dev server for the whole run. Each
 * test file clones a migrated template database and uses its own task queue,
 * so files never see each other's rows or workflows.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.activityCoreTestServers ??= { servers: startServers(), users: 0 };
  const entry = shared.activityCoreTestServers;
  entry.users++;
  const servers = await entry.servers;
  project.provide('postgresPort', servers.postgresPort);
  project.provide('templateDatabase', TEMPLATE_DATABASE);
  project.provide('temporalAddress', servers.temporalAddress);
  project.provide('temporalCli', servers.temporalCli);
  project.provide('temporalTestServer', servers.temporalTestServer);
  project.provide('workflowBundlePath', servers.workflowBundlePath);
  project.provide('productionBuild', servers.productionBuild);
  return async () => {
    if (--entry.users > 0) return;
    shared.activityCoreTestServers = undefined;
    await servers.stop();
  };
}

async function startServers(): Promise<Servers> {
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
  // Inside the project, so that the compiled entry points resolve node_modules and "type": "module".
  const productionBuild = join(root, '.data', `test-build-${randomUUID()}`);
  await buildProduction(productionBuild, { workflowBundleCode: bundle.code });

  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  // A cluster that lives for one run and is never recovered after an operating-system crash: no flush
  // to disk per commit, per checkpoint or per cloned database (every test file clones the template).
  // All three are reloadable settings; the fault tests' own clusters (restartable-postgres.ts) keep theirs.
  for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes'])
    await admin.query(`ALTER SYSTEM SET ${setting} = off`);
  await admin.query('SELECT pg_reload_conf()');
  await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  await admin.end();
  await runMigrations(postgres.urlFor(TEMPLATE_DATABASE));

  return {
    postgresPort: postgres.port,
    temporalAddress: temporal.address,
    temporalCli: cli,
    temporalTestServer: findTemporalTestServer(root, process.env.TEMPORAL_TEST_SERVER_PATH, process.env.PATH) ?? '',
    workflowBundlePath: bundlePath,
    productionBuild,
    stop: async () => {
      await rm(productionBuild, { recursive: true, force: true });
      await temporal.stop();
      await postgres.stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
