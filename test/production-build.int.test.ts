import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@activity-core/dev-services';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runProductionSmoke } from '../scripts/production-smoke';
import { postgresUrl } from './harness';

const root = process.cwd();
// Inside the project (gitignored): the compiled files resolve their packages from its node_modules.
const distDir = join(root, '.data', `production-build-${randomUUID()}`);
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
  // `npm run build`, into a directory of its own so that it never races a developer's dist/.
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/build.ts', `--out=${distDir}`], {
    cwd: root,
    timeout: 240_000,
  });
  // Empty, not the migrated template: the compiled processes must find and apply their migrations.
  await admin((client) => client.query(`CREATE DATABASE ${database}`));
}, 300_000);

afterAll(async () => {
  await admin((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  await rm(distDir, { recursive: true, force: true });
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
