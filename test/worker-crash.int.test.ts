import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, httpTaskAttemptId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { startHttpTarget } from './http-target';
import { startStack, waitFor, type TestStack } from './harness';
import { killHard, spawnWorkerProcess } from './worker-process';

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  // The API in-process; the worker is a separate process this test can kill.
  [stack, target] = await Promise.all([
    startStack({ worker: false }),
    // The first call to /held never gets an answer: the worker making it dies first.
    startHttpTarget((request) =>
      request.url === '/held' && target.requests.filter((r) => r.url === '/held').length === 1
        ? new Promise(() => undefined)
        : { status: 200, body: { ok: true } },
    ),
  ]);
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

describe('a worker that dies mid-run', () => {
  test('is replaced and the run completes without any task starting twice or any row duplicated', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'crash-me',
        triggers: [{ type: 'event', event_type: 'crash.test' }],
        tasks: [
          { type: 'http', config: { url: `${target.url}/first` } },
          { type: 'delay', config: { duration: '3s' } },
          { type: 'http', config: { url: `${target.url}/second` } },
        ],
      },
    });
    const activity = created.json();

    const first = spawnWorkerProcess(stack.config);
    await first.ready;
    await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'evt_crash',
        event_type: 'crash.test',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    const workflowId = eventRunWorkflowId(activity.id, 'evt_crash');
    const runId = runIdFor(workflowId);

    // Kill the worker between tasks: the first is done, the durable delay is running.
    await waitFor('task 0 done and task 1 running', async () => {
      const rows = await stack.sql.query(
        'SELECT task_index, status FROM task_instances WHERE run_id = $1 ORDER BY task_index',
        [runId],
      );
      const states = rows.rows.map((r) => `${r.task_index}:${r.status}`).join(',');
      return states === '0:succeeded,1:running' ? true : undefined;
    });
    await killHard(first.child);
    expect(target.requests.map((r) => r.url)).toEqual(['/first']);

    const second = spawnWorkerProcess(stack.config);
    try {
      await second.ready;
      const result = await stack.client.workflow.getHandle(workflowId).result();
      expect(result).toMatchObject({ runId, status: 'succeeded' });
    } finally {
      await killHard(second.child);
    }

    // Each task's external call happened once; each child workflow was started once.
    expect(target.requests.map((r) => r.url)).toEqual(['/first', '/second']);
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    const childStarts = (history.events ?? [])
      .filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes != null)
      .map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId);
    expect(childStarts).toEqual([
      taskWorkflowId(runId, 'http', 0),
      taskWorkflowId(runId, 'delay', 1),
      taskWorkflowId(runId, 'http', 2),
    ]);

    const runs = await stack.sql.query('SELECT status FROM activity_runs WHERE workflow_id = $1', [workflowId]);
    expect(runs.rows).toEqual([{ status: 'succeeded' }]);
    const tasks = await stack.sql.query(
      'SELECT task_index, status FROM task_instances WHERE run_id = $1 ORDER BY task_index',
      [runId],
    );
    expect(tasks.rows).toEqual([
      { task_index: 0, status: 'succeeded' },
      { task_index: 1, status: 'succeeded' },
      { task_index: 2, status: 'succeeded' },
    ]);
  });
});

describe('a worker that dies while an http request is in flight', () => {
  test('has the request retried by another worker with the same Idempotency-Key and the next attempt id', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'crash-in-flight',
        triggers: [{ type: 'event', event_type: 'crash.in-flight' }],
        // A short per-attempt timeout: Temporal notices the dead worker when the attempt times out.
        tasks: [
          {
            type: 'http',
            config: { url: `${target.url}/held`, timeout: '3s' },
            retry: { max_attempts: 3, initial_interval: '100ms' },
          },
        ],
      },
    });
    const activity = created.json();
    const first = spawnWorkerProcess(stack.config);
    await first.ready;
    await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'evt_in_flight',
        event_type: 'crash.in-flight',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    const workflowId = eventRunWorkflowId(activity.id, 'evt_in_flight');
    const runId = runIdFor(workflowId);
    await waitFor('the request to be in flight', async () =>
      target.requests.some((r) => r.url === '/held') ? true : undefined,
    );
    await killHard(first.child);

    const second = spawnWorkerProcess(stack.config);
    try {
      await second.ready;
      await stack.client.workflow.getHandle(workflowId).result();
    } finally {
      await killHard(second.child);
    }
    const held = target.requests.filter((r) => r.url === '/held');
    expect(held).toHaveLength(2);
    expect(held.map((r) => r.headers['idempotency-key'])).toEqual([
      taskWorkflowId(runId, 'http', 0),
      taskWorkflowId(runId, 'http', 0),
    ]);
    expect(held.map((r) => r.headers['x-activity-attempt-id'])).toEqual([
      httpTaskAttemptId(taskWorkflowId(runId, 'http', 0), 1),
      httpTaskAttemptId(taskWorkflowId(runId, 'http', 0), 2),
    ]);
    const tasks = await stack.sql.query('SELECT status, attempt_count FROM task_instances WHERE run_id = $1', [runId]);
    expect(tasks.rows).toEqual([{ status: 'succeeded', attempt_count: 2 }]);
  });
});
