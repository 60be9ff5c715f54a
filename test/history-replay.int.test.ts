import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, test } from 'vitest';
import {
  HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH,
  LOCAL_BOOKKEEPING_PATCH,
} from '../packages/temporal/src/workflows/effect-options';
import { workflowBundle } from './harness';

const dir = join(process.cwd(), 'test', 'histories');

/**
 * Histories recorded from earlier versions of the workflows, one or more per
 * history shape. Replaying them with today's code catches a change that would
 * break runs already in flight when a new worker version is deployed. A change
 * that adds a shape (behind `patched()`) adds histories next to these, never
 * instead of them: `RECORD_HISTORIES=<shape> npx vitest run test/tasks.int.test.ts`
 * (see test/golden-histories.ts and docs/operating.md, "Changing workflow code").
 */
describe('recorded workflow histories', async () => {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.binpb')).sort();
  const workflowIds = JSON.parse(await readFile(join(dir, 'workflow-ids.json'), 'utf8')) as Record<string, string>;

  test('there are recorded histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
  });

  const patchesOf = async (file: string): Promise<string[]> => {
    const history = temporal.api.history.v1.History.decode(await readFile(join(dir, file)));
    return history.events
      .map((event) => event.markerRecordedEventAttributes)
      .filter((marker) => marker?.markerName === 'core_patch')
      .map(
        (marker) =>
          (
            JSON.parse(Buffer.from(marker?.details?.['patch-data']?.payloads?.[0]?.data ?? []).toString('utf8')) as {
              id: string;
            }
          ).id,
      );
  };

  test('both bookkeeping shapes are recorded: ordinary activities (no patch) and local activities (the patch)', async () => {
    const runHistories = files.filter((file) => file.startsWith('run-activity-workflow'));
    const taskHistories = files.filter((file) => file.startsWith('task-workflow'));
    for (const group of [runHistories, taskHistories]) {
      const patches = await Promise.all(group.map(patchesOf));
      expect(patches.some((ids) => !ids.includes(LOCAL_BOOKKEEPING_PATCH))).toBe(true);
      expect(patches.some((ids) => ids.includes(LOCAL_BOOKKEEPING_PATCH))).toBe(true);
    }
  });

  test('http tasks of both cancellation shapes are recorded: cancelled at once (no patch) and waited for (the patch)', async () => {
    const httpTasks = files.filter((file) => file.startsWith('task-workflow-http'));
    const patches = await Promise.all(httpTasks.map(patchesOf));
    expect(patches.some((ids) => !ids.includes(HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH))).toBe(true);
    expect(patches.some((ids) => ids.includes(HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH))).toBe(true);
  });

  for (const file of files) {
    test(`${file} replays without nondeterminism on the current code`, async () => {
      const history = temporal.api.history.v1.History.decode(await readFile(join(dir, file)));
      expect(workflowIds[file], `${file} has no entry in workflow-ids.json`).toBeDefined();
      await expect(
        Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, workflowIds[file]),
      ).resolves.toBeUndefined();
    });
  }
});
