import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, test } from 'vitest';
import { workflowBundle } from './harness';

const dir = join(process.cwd(), 'test', 'histories');

/**
 * Histories recorded from earlier versions of the workflows (refresh with
 * `RECORD_HISTORIES=1 npx vitest run --project integration test/tasks.int.test.ts`
 * only when a change is meant to be incompatible and old runs are drained).
 * Replaying them with today's code catches a change that would break runs
 * already in flight when a new worker version is deployed.
 */
describe('recorded workflow histories', async () => {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.binpb')).sort();
  const workflowIds = JSON.parse(await readFile(join(dir, 'workflow-ids.json'), 'utf8')) as Record<string, string>;

  test('there are recorded histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
  });

  for (const file of files) {
    test(`${file} replays without nondeterminism on the current code`, async () => {
      const history = temporal.api.history.v1.History.decode(await readFile(join(dir, file)));
      expect(workflowIds[file], `${file} has no entry in workflow-ids.json`).toBeDefined();
      await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, workflowIds[file])).resolves.toBeUndefined();
    });
  }
});
