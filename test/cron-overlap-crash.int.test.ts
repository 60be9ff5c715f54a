import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startHttpTarget } from './http-target';
import { startStack, waitFor, type TestStack } from './harness';
import { disable, everySeconds, registerActivity } from './schedule-helpers';
import { killHard, spawnWorkerProcess } from './worker-process';

interface RunRow {
  run_id: string;
  workflow_id: string;
  status: string;
  error: { type?: string; policy?: string } | null;
}

/** The activity's runs, oldest fire first. */
async function runsOf(stack: TestStack, activityId: string): Promise<RunRow[]> {
  const result = await stack.sql.query(
    'SELECT run_id, workflow_id, status, error FROM activity_runs WHERE activity_id = $1 ORDER BY scheduled_for',
    [activityId],
  );
  return result.rows as RunRow[];
}

/** The cron's period: a fire every CRON_PERIOD_S seconds keeps a next run waiting behind the running one. */
const CRON_PERIOD_S = 2;
/**
 * Each run's durable timer. Longer than one cron period (so the next fire is
 * buffered while the first run waits) plus the time to see the buffered run,
 * disable the schedule and kill the worker (about 3.5 s from the run's
 * start on an idle machine, with room here for one three times slower), so
 * the kill lands while no request is in flight; `calls` being empty at the
 * kill checks it.
 */
const RUN_DELAY = '10s';

describe('cron overlap policies across a worker crash', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('a worker SIGKILLed while a cron run is buffered: a new worker finishes the running and the buffered run, each once, in fire order', async () => {
    // Each run waits first (a durable timer, so no request is in flight when the worker dies), then calls the target.
    const calls: Array<{ run: string | null; at: number }> = [];
    const target = await startHttpTarget(async (request) => {
      calls.push({ run: new URL(request.url, 'http://x').searchParams.get('run'), at: Date.now() });
      return { status: 200, body: { ok: true } };
    });
    const first = spawnWorkerProcess(stack.config, { CRON_ALLOW_SECONDS: 'true' });
    let second: ReturnType<typeof spawnWorkerProcess> | undefined;
    let id: string | undefined;
    try {
      await first.ready;
      const activity = await registerActivity(stack, {
        name: 'overlap-crash',
        triggers: [{ type: 'cron', cron: everySeconds(CRON_PERIOD_S), overlap: 'buffer_one' }],
        tasks: [
          { type: 'delay', config: { duration: RUN_DELAY } },
          { type: 'http', config: { url: `${target.url}/work?run={{run.run_id}}`, timeout: '30s' } },
        ],
      });
      id = activity.id;
      const [running, buffered] = await waitFor(
        'one cron run holding the overlap slot and the next one buffered',
        async () => {
          const runs = await runsOf(stack, activity.id);
          return runs[0]?.status === 'running' && runs[1]?.status === 'waiting_for_slot' ? runs : undefined;
        },
        90_000,
      );
      // No further fires: the two runs are the ones the new worker must finish.
      await disable(stack, activity.id);
      await killHard(first.child);
      expect(calls).toEqual([]);

      second = spawnWorkerProcess(stack.config, { CRON_ALLOW_SECONDS: 'true' });
      await second.ready;
      const runningHandle = stack.client.workflow.getHandle(running!.workflow_id);
      const bufferedHandle = stack.client.workflow.getHandle(buffered!.workflow_id);
      expect(await runningHandle.result()).toMatchObject({ status: 'succeeded' });
      expect(await bufferedHandle.result()).toMatchObject({ status: 'succeeded' });

      // Each run called the target exactly once, the buffered one after the running one had finished.
      expect(calls.map((call) => call.run)).toEqual([running!.run_id, buffered!.run_id]);
      const runningClosed = (await runningHandle.describe()).closeTime!.getTime();
      const bufferedTask = await stack.sql.query(
        'SELECT started_at FROM task_instances WHERE run_id = $1 ORDER BY task_index LIMIT 1',
        [buffered!.run_id],
      );
      expect((bufferedTask.rows[0].started_at as Date).getTime()).toBeGreaterThanOrEqual(runningClosed - 1000);

      const runs = await runsOf(stack, activity.id);
      expect(runs.find((run) => run.run_id === running!.run_id)?.status).toBe('succeeded');
      expect(runs.find((run) => run.run_id === buffered!.run_id)?.status).toBe('succeeded');
      // Every other fire's run was skipped by the policy, never run.
      for (const run of runs.filter((row) => row.run_id !== running!.run_id && row.run_id !== buffered!.run_id))
        expect(run).toMatchObject({ status: 'skipped', error: { type: 'overlap', policy: 'buffer_one' } });
    } finally {
      if (id !== undefined) await disable(stack, id).catch(() => undefined);
      await killHard(first.child);
      if (second !== undefined) await killHard(second.child);
      await target.close();
    }
  }, 240_000);
});
