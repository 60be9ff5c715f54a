import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '@activity-core/dev-services';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runProductionSmoke } from '../scripts/production-smoke';
import { postgresUrl } from './harness';

const root = process.cwd();
/**
 * The run's production build: the global setup makes it once with
 * `buildProduction` (scripts/build.ts, what `npm run build` runs), inside the
 * project so the compiled files resolve their packages from its node_modules.
 * Shared with every file that spawns the API or the worker: read, never changed.
 */
const distDir = inject('productionBuild');
const database = `t_${randomUUID().replace(/-/g, '')}`;

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl('postgres') });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  // Empty, not the migrated template: the compiled processes must find and apply their migrations.
  await admin((client) => client.query(`CREATE DATABASE ${database}`));
});

afterAll(async () => {
  await admin((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
});

describe('the production build', () => {
  test('the compiled entry points carry the workspace packages and import only installed packages at run time', async () => {
    for (const entry of ['api/main.js', 'worker/main.js', 'db/migrate.js']) {
      const code = await readFile(join(distDir, entry), 'utf8');
      expect(code, entry).not.toMatch(/from\s*["']@activity-core\//);
      expect(code, entry).not.toMatch(/(from|import\()\s*["'][^"']*\.ts["']/);
    }
  });

  test('the compiled API does not import the Temporal worker or its native core bridge; the compiled worker does', async () => {
    const workerPackage = /(from|import\(?)\s*["']@temporalio\/(worker|core-bridge)["'/]/;
    expect(await readFile(join(distDir, 'api/main.js'), 'utf8')).not.toMatch(workerPackage);
    expect(await readFile(join(distDir, 'worker/main.js'), 'utf8')).toMatch(workerPackage);
  });

  test('plain node runs the compiled API and worker: migrations apply, /readyz is ready, an event runs to success on the prebuilt workflow bundle, SIGTERM stops both cleanly', async () => {
    const result = await runProductionSmoke({
      distDir,
      cwd: root,
      databaseUrl: postgresUrl(database),
      temporalAddress: inject('temporalAddress'),
      apiPort: await freePort(),
    });
    expect(result.workflowBundle).toBe(join(distDir, 'worker', 'workflow-bundle.js'));
    expect(result.apiExitCode).toBe(0);
    expect(result.workerExitCode).toBe(0);
  }, 600_000);
});
