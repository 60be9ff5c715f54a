import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { startHttpTarget } from './http-target';
import { startStack, type TestStack } from './harness';

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  [stack, target] = await Promise.all([startStack(), startHttpTarget()]);
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

async function countExecutions(workflowId: string): Promise<number> {
  let count = 0;
  for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) count++;
  return count;
}

describe('a run reset from the Temporal UI', () => {
  test('keeps its run id and rows, and waits for its existing tasks instead of starting them again', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'reset-me',
        triggers: [{ type: 'event', event_type: 'reset.test' }],
        tasks: [{ type: 'http', config: { url: `${target.url}/once` } }, { type: 'noop' }],
      },
    });
    const activityId = created.json().id as string;
    await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'evt_reset',
        event_type: 'reset.test',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    const workflowId = eventRunWorkflowId(activityId, 'evt_reset');
    const runId = runIdFor(workflowId);
    const handle = stack.client.workflow.getHandle(workflowId);
    await handle.result();
    const firstRun = (await handle.describe()).runId;

    // Reset to the first workflow task: the new execution re-runs everything after it.
    const history = await handle.fetchHistory();
    const firstTask = (history.events ?? []).find(
      (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    );
    const reset = await stack.client.workflowService.resetWorkflowExecution({
      namespace: stack.config.temporal.namespace,
      workflowExecution: { workflowId, runId: firstRun },
      reason: 'test: operator reset',
      workflowTaskFinishEventId: firstTask?.eventId,
      requestId: randomUUID(),
    });
    expect(reset.runId).not.toBe(firstRun);
    const outcome = await stack.client.workflow.getHandle(workflowId, reset.runId ?? undefined).result();
    expect(outcome).toMatchObject({ runId, status: 'succeeded' });

    // The reset execution found its children's ids taken and waited for them.
    const resetHistory = await stack.client.workflow.getHandle(workflowId, reset.runId ?? undefined).fetchHistory();
    const waited = (resetHistory.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitTaskWorkflow',
    );
    expect(waited).toHaveLength(2);

    // Same run id, same rows; the tasks' external work was not redone.
    expect(target.requests.map((r) => r.url)).toEqual(['/once']);
    for (const child of [taskWorkflowId(runId, 'http', 0), taskWorkflowId(runId, 'noop', 1)])
      expect(await countExecutions(child)).toBe(1);
    const runs = await stack.sql.query('SELECT run_id, status FROM activity_runs WHERE workflow_id = $1', [workflowId]);
    expect(runs.rows).toEqual([{ run_id: runId, status: 'succeeded' }]);
    const tasks = await stack.sql.query(
      'SELECT task_index, status FROM task_instances WHERE run_id = $1 ORDER BY task_index',
      [runId],
    );
    expect(tasks.rows).toEqual([
      { task_index: 0, status: 'succeeded' },
      { task_index: 1, status: 'succeeded' },
    ]);
  });
});
