import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cronOverlapCoordinatorWorkflowId } from '@activity-core/contracts';
import { recordGoldenHistory } from './golden-histories';
import { startHttpTarget } from './http-target';
import { startStack, waitFor, type TestStack } from './harness';
import { disable, everySeconds, registerActivity } from './schedule-helpers';

/**
 * An http target that holds every request until the test opens the gate, and
 * records which runs called it (by run id) and how many were in flight at once.
 */
async function startGatedTarget() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let inFlight = 0;
  let maxInFlight = 0;
  const target = await startHttpTarget(async () => {
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await gate;
    inFlight -= 1;
    return { status: 200, body: { ok: true } };
  });
  return {
    target,
    open,
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    callers: () => target.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('run')),
  };
}

interface RunRow {
  run_id: string;
  workflow_id: string;
  scheduled_for: Date;
  status: string;
  error: { type?: string; message?: string; policy?: string } | null;
  cancelled_by_run: string | null;
}

/** The activity's cron runs, oldest fire first. */
async function runsOf(stack: TestStack, activityId: string): Promise<RunRow[]> {
  const result = await stack.sql.query(
    `SELECT run_id, workflow_id, scheduled_for, status, error, cancelled_by_run FROM activity_runs
      WHERE activity_id = $1 ORDER BY scheduled_for`,
    [activityId],
  );
  return result.rows as RunRow[];
}

const httpTask = (url: string) => ({
  type: 'http',
  config: { url: `${url}/work?run={{run.run_id}}`, timeout: '5m' },
});

async function cronActivity(stack: TestStack, name: string, task: object, overlap?: string): Promise<string> {
  const activity = await registerActivity(stack, {
    name,
    triggers: [{ type: 'cron', cron: everySeconds(2), ...(overlap === undefined ? {} : { overlap }) }],
    tasks: [task],
  });
  return activity.id;
}

/** Leaves nothing running behind a test: cancels every open run of the activity. */
async function cancelOpenRuns(stack: TestStack, activityId: string): Promise<void> {
  for (const run of await runsOf(stack, activityId)) {
    if (run.status !== 'running' && run.status !== 'waiting_for_slot') continue;
    await stack.client.workflow
      .getHandle(run.workflow_id)
      .cancel()
      .catch(() => undefined);
  }
}

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

describe('cron overlap policies applied to runs', () => {
  test('skip: the run of a later fire is recorded skipped with the reason while the first still runs, in the run and in the fire log', async () => {
    const gated = await startGatedTarget();
    const id = await cronActivity(stack, 'overlap-skip', httpTask(gated.target.url), 'skip');
    try {
      const [first, skipped] = await waitFor(
        'a run holding the slot and a later one skipped',
        async () => {
          const runs = await runsOf(stack, id);
          const skippedRun = runs.find((run) => run.status === 'skipped');
          return runs[0]?.status === 'running' && skippedRun !== undefined ? [runs[0], skippedRun] : undefined;
        },
        60_000,
      );
      // `running` is recorded as the run takes the slot, a moment before its task calls the target.
      await waitFor('the first run to call the target', async () => (gated.callers().length > 0 ? true : undefined));
      expect(gated.callers()).toEqual([first.run_id]);
      expect(skipped.error).toEqual({
        type: 'overlap',
        policy: 'skip',
        trigger_index: 0,
        message: `${first.workflow_id} is still running; the trigger's overlap policy is skip`,
      });

      const run = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${skipped.run_id}` });
      expect(run.json()).toMatchObject({ status: 'skipped', error: { type: 'overlap', policy: 'skip' } });

      const fires = await stack.api.server.inject({ method: 'GET', url: `/v1/activities/${id}/fires?limit=500` });
      const fire = (fires.json().items as Array<Record<string, unknown>>).find(
        (item) => item.workflow_id === skipped.workflow_id,
      );
      expect(fire).toMatchObject({ status: 'started', run_status: 'skipped', run_error: { type: 'overlap' } });
      const explained = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/activities/${id}/fires/${encodeURIComponent(String(fire!.scheduled_for))}`,
      });
      expect(explained.json().explanation).toContain(
        `but the run was skipped by the trigger's overlap policy: ${first.workflow_id} is still running`,
      );
      expect((await runsOf(stack, id))[0]?.status).toBe('running');

      await disable(stack, id);
      gated.open();
      await stack.client.workflow.getHandle(first.workflow_id).result();
      expect(gated.maxInFlight()).toBe(1);
    } finally {
      await disable(stack, id).catch(() => undefined);
      gated.open();
      await cancelOpenRuns(stack, id);
      await gated.target.close();
    }
  }, 120_000);

  test('buffer_one: of three overlapping fires one waits and the third is skipped; the waiting one runs after the first ends', async () => {
    const gated = await startGatedTarget();
    const id = await cronActivity(stack, 'overlap-buffer-one', httpTask(gated.target.url), 'buffer_one');
    try {
      const [first, waiting, third] = await waitFor(
        'one run holding the slot, one waiting, one skipped',
        async () => {
          const runs = await runsOf(stack, id);
          return runs.length >= 3 && runs[2]!.status === 'skipped' ? runs : undefined;
        },
        60_000,
      );
      expect(first!.status).toBe('running');
      expect(waiting!.status).toBe('waiting_for_slot');
      expect(third!.error).toMatchObject({
        type: 'overlap',
        policy: 'buffer_one',
        message: `${first!.workflow_id} is still running and ${waiting!.workflow_id} already waits for it; the trigger's overlap policy is buffer_one`,
      });
      const listed = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/runs?activity_id=${id}&status=waiting_for_slot`,
      });
      expect(listed.json().items.map((item: { run_id: string }) => item.run_id)).toEqual([waiting!.run_id]);
      expect(gated.callers()).toEqual([first!.run_id]);

      await disable(stack, id);
      gated.open();
      expect(await stack.client.workflow.getHandle(first!.workflow_id).result()).toMatchObject({ status: 'succeeded' });
      expect(await stack.client.workflow.getHandle(waiting!.workflow_id).result()).toMatchObject({
        status: 'succeeded',
      });
      // The waiting run called the target only once the first had ended.
      expect(gated.callers().slice(0, 2)).toEqual([first!.run_id, waiting!.run_id]);
      expect(gated.maxInFlight()).toBe(1);
      // Golden histories of the overlap shape (see recordGoldenHistory): a run that waited, and its coordinator.
      const waited = stack.client.workflow.getHandle(waiting!.workflow_id);
      await recordGoldenHistory(
        'run-activity-workflow-overlap-buffered',
        await waited.fetchHistory(),
        waited.workflowId,
      );
      const coordinator = stack.client.workflow.getHandle(cronOverlapCoordinatorWorkflowId(id, 0));
      await recordGoldenHistory(
        'overlap-coordinator-buffer-one',
        await coordinator.fetchHistory(),
        coordinator.workflowId,
      );
    } finally {
      await disable(stack, id).catch(() => undefined);
      gated.open();
      await cancelOpenRuns(stack, id);
      await gated.target.close();
    }
  }, 120_000);

  test('cancel_other: the running run is cancelled, says which run replaced it, and the new run runs', async () => {
    const id = await cronActivity(
      stack,
      'overlap-cancel-other',
      { type: 'delay', config: { duration: '10m' } },
      'cancel_other',
    );
    try {
      const [first, second] = await waitFor(
        'the first run cancelled and the next one running',
        async () => {
          const runs = await runsOf(stack, id);
          const [a, b] = runs;
          return a?.status === 'cancelled' && b !== undefined && a.cancelled_by_run === b.workflow_id
            ? [a, b]
            : undefined;
        },
        60_000,
      );
      const run = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${first.run_id}` });
      expect(run.json()).toMatchObject({ status: 'cancelled', cancelled_by_run: second.workflow_id });
      const explained = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/activities/${id}/fires/${first.scheduled_for.toISOString()}`,
      });
      expect(explained.json().explanation).toContain(
        `but the run was cancelled: the trigger's overlap policy is cancel_other and ${second.workflow_id} replaced it`,
      );
      // The new run took the slot and ran its task (it holds it until the next fire replaces it).
      // A window for a loaded machine: the new run waits for the cancelled one to release the slot first.
      await waitFor(
        'the second run to start its delay task',
        async () => {
          const tasks = await stack.sql.query('SELECT 1 FROM task_instances WHERE run_id = $1', [second.run_id]);
          return tasks.rowCount! > 0 ? true : undefined;
        },
        60_000,
      );
      const cancelled = stack.client.workflow.getHandle(first.workflow_id);
      await recordGoldenHistory(
        'run-activity-workflow-overlap-cancelled',
        await cancelled.fetchHistory(),
        cancelled.workflowId,
      );
      const coordinator = stack.client.workflow.getHandle(cronOverlapCoordinatorWorkflowId(id, 0));
      await recordGoldenHistory(
        'overlap-coordinator-cancel-other',
        await coordinator.fetchHistory(),
        coordinator.workflowId,
      );
      await disable(stack, id);
      // Never two runs holding the slot at once: at most one run is running at any time.
      const open = (await runsOf(stack, id)).filter((row) => row.status === 'running');
      expect(open.length).toBeLessThanOrEqual(1);
    } finally {
      await disable(stack, id).catch(() => undefined);
      await cancelOpenRuns(stack, id);
    }
  }, 120_000);

  test('without overlap, and with allow_all, the runs of successive fires overlap as they always did', async () => {
    const gated = await startGatedTarget();
    const absent = await cronActivity(stack, 'overlap-absent', httpTask(gated.target.url));
    const allowAll = await cronActivity(stack, 'overlap-allow-all', httpTask(gated.target.url), 'allow_all');
    try {
      // The gate holds every call: two runs of one activity calling the target are two runs in flight at once.
      await waitFor(
        'two runs of each activity in flight at once',
        async () => {
          const both = await Promise.all([runsOf(stack, absent), runsOf(stack, allowAll)]);
          const calling = both.map((runs) => runs.filter((run) => gated.callers().includes(run.run_id)).length);
          return calling.every((count) => count >= 2) ? true : undefined;
        },
        60_000,
      );
      expect(gated.inFlight()).toBeGreaterThanOrEqual(4);
      for (const activityId of [absent, allowAll]) {
        const runs = await runsOf(stack, activityId);
        expect(runs.some((run) => run.status === 'waiting_for_slot' || run.status === 'skipped')).toBe(false);
      }
    } finally {
      await disable(stack, absent).catch(() => undefined);
      await disable(stack, allowAll).catch(() => undefined);
      gated.open();
      await cancelOpenRuns(stack, absent);
      await cancelOpenRuns(stack, allowAll);
      await gated.target.close();
    }
  }, 120_000);

  test('buffer_all: a holder terminated from Temporal frees the slot and the next waiting run starts', async () => {
    const gated = await startGatedTarget();
    const id = await cronActivity(stack, 'overlap-terminate', httpTask(gated.target.url), 'buffer_all');
    try {
      const [first, next] = await waitFor(
        'one run holding the slot and one waiting',
        async () => {
          const runs = await runsOf(stack, id);
          return runs[0]?.status === 'running' && runs[1]?.status === 'waiting_for_slot' ? runs : undefined;
        },
        60_000,
      );
      await disable(stack, id);
      await stack.client.workflow.getHandle(first!.workflow_id).terminate('operator stopped it');
      // The holder never releases; the coordinator's watchdog (every 10 s) finds it closed.
      await waitFor(
        'the next run to call the target',
        async () => (gated.callers().includes(next!.run_id) ? true : undefined),
        60_000,
      );
      expect(gated.callers()[0]).toBe(first!.run_id);
      expect(gated.callers()[1]).toBe(next!.run_id);
    } finally {
      await disable(stack, id).catch(() => undefined);
      gated.open();
      await cancelOpenRuns(stack, id);
      await gated.target.close();
    }
  }, 120_000);

  test('buffer_all: a buffered run cancelled through the API leaves the queue without running, and the next one runs', async () => {
    const gated = await startGatedTarget();
    const id = await cronActivity(stack, 'overlap-cancel-waiting', httpTask(gated.target.url), 'buffer_all');
    try {
      const [first, cancelled, next] = await waitFor(
        'one run holding the slot and two buffered',
        async () => {
          const runs = await runsOf(stack, id);
          return runs[0]?.status === 'running' &&
            runs[1]?.status === 'waiting_for_slot' &&
            runs[2]?.status === 'waiting_for_slot'
            ? runs
            : undefined;
        },
        60_000,
      );
      await disable(stack, id);
      const cancel = await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${cancelled!.run_id}/cancel` });
      expect(cancel.statusCode, cancel.body).toBe(202);
      expect(cancel.json()).toEqual({ run_id: cancelled!.run_id, cancel_requested: true });
      await waitFor('the buffered run to be cancelled', async () => {
        const run = (await runsOf(stack, id)).find((row) => row.run_id === cancelled!.run_id);
        return run?.status === 'cancelled' ? true : undefined;
      });
      gated.open();
      expect(await stack.client.workflow.getHandle(next!.workflow_id).result()).toMatchObject({ status: 'succeeded' });
      expect(gated.callers().slice(0, 2)).toEqual([first!.run_id, next!.run_id]);
      expect(gated.callers()).not.toContain(cancelled!.run_id);
    } finally {
      await disable(stack, id).catch(() => undefined);
      gated.open();
      await cancelOpenRuns(stack, id);
      await gated.target.close();
    }
  }, 120_000);

  test('with a concurrency limit too, a cron run takes its overlap slot first and holds it while it waits for a concurrency slot', async () => {
    // Each call is held until the test releases that run.
    const releases = new Map<string, () => void>();
    const held = (runId: string) => new Promise<void>((resolve) => releases.set(runId, resolve));
    const target = await startHttpTarget(async (request) => {
      await held(new URL(request.url, 'http://x').searchParams.get('run') ?? '');
      return { status: 200, body: { ok: true } };
    });
    const callers = () => target.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('run'));
    const activity = await registerActivity(stack, {
      name: 'overlap-with-concurrency',
      triggers: [{ type: 'cron', cron: everySeconds(2), overlap: 'skip' }],
      tasks: [httpTask(target.url)],
      concurrency: { limit: 1 },
    });
    const id = activity.id;
    try {
      const first = await waitFor('the first cron run to call the target', async () => {
        const runs = await runsOf(stack, id);
        return runs[0] !== undefined && callers().includes(runs[0].run_id) ? runs[0] : undefined;
      });
      // A manual run (no overlap policy) queues for the one concurrency slot.
      const manual = await stack.api.server.inject({
        method: 'POST',
        url: `/v1/activities/${id}/schedules/trigger`,
        headers: { 'idempotency-key': 'overlap-combo' },
      });
      expect(manual.statusCode, manual.body).toBe(202);
      const manualRunId = manual.json().run_id as string;
      await waitFor('the manual run to wait for the concurrency slot', async () => {
        const row = await stack.sql.query('SELECT status FROM activity_runs WHERE run_id = $1', [manualRunId]);
        return row.rows[0]?.status === 'waiting_for_slot' ? true : undefined;
      });
      releases.get(first.run_id)!();
      // The manual run gets the concurrency slot; the next cron run holds the overlap slot and waits behind it,
      // so the fires after it are skipped by the overlap policy, naming it.
      const [waiting, skipped] = await waitFor(
        'a cron run waiting for the concurrency slot and a later one skipped by overlap',
        async () => {
          const runs = (await runsOf(stack, id)).filter((run) => run.scheduled_for !== null);
          const waitingRun = runs.find((run) => run.status === 'waiting_for_slot');
          const skippedRun = runs.find(
            (run) => run.status === 'skipped' && run.error?.message?.startsWith(waitingRun?.workflow_id ?? '-'),
          );
          return waitingRun !== undefined && skippedRun !== undefined ? [waitingRun, skippedRun] : undefined;
        },
        60_000,
      );
      expect(callers()).toEqual([first.run_id, manualRunId]);
      expect(skipped.error).toMatchObject({ type: 'overlap', policy: 'skip' });
      await disable(stack, id);
      releases.get(manualRunId)!();
      await waitFor('the waiting cron run to call the target', async () =>
        callers().includes(waiting.run_id) ? true : undefined,
      );
      releases.get(waiting.run_id)!();
    } finally {
      await disable(stack, id).catch(() => undefined);
      for (const release of releases.values()) release();
      await cancelOpenRuns(stack, id);
      await target.close();
    }
  }, 120_000);

  test('the worked example of docs/schedules.md registers as written', async () => {
    const doc = await readFile(join(process.cwd(), 'docs', 'schedules.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Overlapping runs'));
    const body = /-d '(\{[\s\S]*?\})'/.exec(section)?.[1];
    expect(body).toBeDefined();
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: JSON.parse(body!),
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().definition.triggers[0]).toMatchObject({ overlap: 'buffer_one' });
    await disable(stack, created.json().id as string);
  });

  test('an overlap policy that is not one of the five is refused with a 400 naming the field', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'overlap-bad',
        triggers: [{ type: 'cron', cron: '0 9 * * *', overlap: 'terminate_other' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(response.statusCode).toBe(400);
    expect(response.body).toContain('triggers');
    expect(response.body).toContain('overlap');
  });
});
