import {
  calledRunWorkflowId,
  eventRunWorkflowId,
  runIdFor,
  taskItemWorkflowId,
  taskWorkflowId,
} from '@activity-core/contracts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ActivityIdKey } from '../packages/temporal/src/search-attributes';
import { recordGoldenHistory } from './golden-histories';
import { startStack, waitFor, type TestStack } from './harness';
import { startHttpTarget } from './http-target';
import { killHard, spawnWorkerProcess } from './worker-process';

/**
 * Task graphs on the real stack: registration refuses broken graphs naming
 * the field, a graph run's branches, conditions, trigger rules and fan-out
 * are recorded task by task, and a worker killed with SIGKILL while three
 * branches and a fan-out are in flight leaves every task run exactly once.
 */
let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  // Slow enough that tasks started together are in flight together.
  let flaky = 0;
  target = await startHttpTarget(async (request) => {
    // `/flaky` fails its first request and answers every later one.
    if (request.url.startsWith('/flaky') && flaky++ === 0) return { status: 500, body: { error: 'first time' } };
    await new Promise((resolve) => setTimeout(resolve, request.url.includes('slow') ? 1_500 : 50));
    return { status: 200, body: { path: request.url, score: request.url.includes('score') ? 0.2 : 1 } };
  });
});
afterAll(async () => {
  await target?.close();
  await stack?.close();
});

const inject = (method: 'GET' | 'POST', url: string, payload?: object) =>
  stack.api.server.inject({ method, url, ...(payload === undefined ? {} : { payload }) });

async function register(body: object): Promise<{ id: string }> {
  const response = await inject('POST', '/v1/activities', body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function finished(runId: string, timeoutMs = 60_000) {
  return await waitFor(
    `run ${runId} to finish`,
    async () => {
      const run = (await inject('GET', `/v1/runs/${runId}`)).json();
      return run.status === 'succeeded' || run.status === 'failed' ? run : undefined;
    },
    timeoutMs,
  );
}

const httpTask = (key: string, path: string, more: object = {}) => ({
  type: 'http',
  key,
  config: { method: 'GET', url: `${target.url}/${path}`, timeout: '5s' },
  retry: { max_attempts: 5, initial_interval: '200ms' },
  ...more,
});

describe('registering a task graph', () => {
  const refused = async (tasks: object[], field: string, message: RegExp) => {
    const name = `bad-graph-${Math.random().toString(36).slice(2, 8)}`;
    const response = await inject('POST', '/v1/activities', { name, tasks });
    expect(response.statusCode, response.body).toBe(400);
    const body = response.json();
    expect(body.errors ?? body.issues, response.body).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: field, message: expect.stringMatching(message) })]),
    );
    expect((await inject('GET', `/v1/activities?name=${name}`)).json().items ?? []).toEqual([]);
  };

  test('refuses a cycle, a task depending on itself and an unknown key, each naming the field', async () => {
    await refused(
      [
        { type: 'noop', key: 'a', depends_on: ['b'] },
        { type: 'noop', key: 'b', depends_on: ['a'] },
      ],
      'tasks[0].depends_on',
      /cycle/,
    );
    await refused([{ type: 'noop', key: 'a', depends_on: ['a'] }], 'tasks[0].depends_on[0]', /itself/);
    await refused(
      [{ type: 'noop', key: 'a', depends_on: ['ghost'] }],
      'tasks[0].depends_on[0]',
      /no task has the key "ghost"/,
    );
  });

  test('refuses a condition that does not compile, a for_each over an unknown variable and a template reading a task that is not an ancestor', async () => {
    await refused(
      [
        { type: 'noop', key: 'a', depends_on: [] },
        { type: 'noop', depends_on: ['a'], if: 'tasks.a.result >' },
      ],
      'tasks[1].if',
      /syntax error/,
    );
    await refused([{ type: 'noop', for_each: 'data.items' }], 'tasks[0].for_each', /unknown variable 'data'/);
    await refused(
      [
        { type: 'noop', key: 'a', depends_on: [] },
        { type: 'http', key: 'b', depends_on: [], config: { url: 'https://example.com/{{ tasks.a.result }}' } },
      ],
      'tasks[1].config.url',
      /not a task this one depends on/,
    );
  });

  test('refuses 10,000 tasks and a parallel bound above the server’s', async () => {
    const many = await inject('POST', '/v1/activities', {
      name: 'too-many-tasks',
      tasks: Array.from({ length: 10_000 }, () => ({ type: 'noop' })),
    });
    expect([400, 413]).toContain(many.statusCode);
    const wide = await inject('POST', '/v1/activities', {
      name: 'too-wide',
      max_parallel: 51,
      tasks: [{ type: 'noop' }],
    });
    expect(wide.statusCode).toBe(400);
    expect(wide.body).toContain('max_parallel');
  });
});

describe('a graph run on the real stack', () => {
  test('runs branches at once, joins their results, skips by condition with the reason, and fans out over the event’s items', async () => {
    const worker = spawnWorkerProcess(stack.config);
    try {
      await worker.ready;
      const activity = await register({
        name: 'graph-e2e',
        triggers: [{ type: 'event', event_type: 'graph.go' }],
        tasks: [
          httpTask('profile', 'profile', { depends_on: [] }),
          httpTask('score', 'score', { depends_on: [] }),
          httpTask('orders', 'orders', { depends_on: [] }),
          {
            ...httpTask('join', 'join/{{ tasks.score.result.body.score }}'),
            depends_on: ['profile', 'score', 'orders'],
          },
          { type: 'noop', key: 'notify', depends_on: ['score'], if: 'tasks.score.result.body.score > 0.5' },
          httpTask('each', 'item/{{ item.sku }}', { depends_on: [], for_each: 'event.data.lines', max_parallel: 2 }),
          { type: 'noop', key: 'cleanup', depends_on: ['join', 'each'], trigger_rule: 'all_done' },
        ],
      });
      const accepted = await inject('POST', '/v1/events', {
        event_id: 'graph-1',
        event_type: 'graph.go',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { lines: [{ sku: 'a' }, { sku: 'b' }, { sku: 'c' }] },
      });
      expect(accepted.statusCode, accepted.body).toBe(202);
      const runId = runIdFor(eventRunWorkflowId(activity.id, 'graph-1'));
      const run = await finished(runId);
      expect(run.status).toBe('succeeded');
      const byIndex = (index: number, item?: number) =>
        run.tasks.find(
          (task: { task_index: number; item_index?: number }) => task.task_index === index && task.item_index === item,
        );
      expect([0, 1, 2, 3, 6].map((index) => byIndex(index)?.status)).toEqual(Array(5).fill('succeeded'));
      expect(byIndex(3)).toMatchObject({ task_key: 'join', result: { body: { path: '/join/0.2' } } });
      expect(byIndex(4)).toMatchObject({
        status: 'skipped',
        task_key: 'notify',
        skipped: { reason: 'condition_false', expression: 'tasks.score.result.body.score > 0.5', value: false },
      });
      for (const [item, sku] of ['a', 'b', 'c'].entries())
        expect(byIndex(5, item)).toMatchObject({
          status: 'succeeded',
          workflow_id: taskItemWorkflowId(runId, 'http', 5, item),
          result: { body: { path: `/item/${sku}` } },
        });
      expect(byIndex(5)).toBeUndefined();
      expect(run.tasks).toHaveLength(9);
      const runWorkflowId = eventRunWorkflowId(activity.id, 'graph-1');
      await recordGoldenHistory(
        'run-activity-workflow-graph',
        await stack.client.workflow.getHandle(runWorkflowId).fetchHistory(),
        runWorkflowId,
      );
      const described = await stack.client.workflow.getHandle(taskWorkflowId(runId, 'http', 3)).describe();
      expect(described.typedSearchAttributes.get(ActivityIdKey)).toBe(activity.id);
      const progress = await stack.client.workflow
        .getHandle(runWorkflowId)
        .query<{ currentDetails: string }>('__temporal_workflow_metadata');
      expect(progress.currentDetails).toContain('7 of 7 tasks settled');
      const item = taskItemWorkflowId(runId, 'http', 5, 1);
      await recordGoldenHistory('task-workflow-item', await stack.client.workflow.getHandle(item).fetchHistory(), item);
    } finally {
      await killHard(worker.child);
    }
  });

  test('a worker killed while three branches and a fan-out are in flight: a new worker finishes the run, every task once', async () => {
    const first = spawnWorkerProcess(stack.config);
    let second: ReturnType<typeof spawnWorkerProcess> | undefined;
    try {
      await first.ready;
      const activity = await register({
        name: 'graph-crash',
        triggers: [{ type: 'event', event_type: 'graph.crash' }],
        max_parallel: 10,
        tasks: [
          httpTask('a', 'slow/a', { depends_on: [] }),
          httpTask('b', 'slow/b', { depends_on: [] }),
          httpTask('c', 'slow/c', { depends_on: [] }),
          httpTask('each', 'slow/item/{{ item }}', { depends_on: [], for_each: 'event.data.items', max_parallel: 3 }),
          { type: 'noop', key: 'join', depends_on: ['a', 'b', 'c', 'each'] },
        ],
      });
      const before = target.requests.length;
      const accepted = await inject('POST', '/v1/events', {
        event_id: 'graph-crash-1',
        event_type: 'graph.crash',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { items: [1, 2, 3, 4, 5] },
      });
      expect(accepted.statusCode, accepted.body).toBe(202);
      const runId = runIdFor(eventRunWorkflowId(activity.id, 'graph-crash-1'));
      // Killed once the three branches and the first items have sent their requests (in flight: 1.5 s answers).
      await waitFor('branches and items in flight', async () =>
        target.requests.slice(before).filter((request) => request.url.startsWith('/slow')).length >= 6
          ? true
          : undefined,
      );
      await killHard(first.child);
      expect(first.exited()).toBe('SIGKILL');

      second = spawnWorkerProcess(stack.config);
      await second.ready;
      const run = await finished(runId, 120_000);
      expect(run.status).toBe('succeeded');
      expect(run.tasks).toHaveLength(9);
      expect(run.tasks.every((task: { status: string }) => task.status === 'succeeded')).toBe(true);

      // One row per task workflow id, one task workflow per id, and one side-effect key per task or item:
      // a request repeated after the crash carries the key of the first.
      const rows = await stack.sql.query(
        'SELECT workflow_id, count(*)::int AS n FROM task_instances WHERE run_id = $1 GROUP BY workflow_id',
        [runId],
      );
      expect(rows.rows.every((row: { n: number }) => row.n === 1)).toBe(true);
      const expected = [
        taskWorkflowId(runId, 'http', 0),
        taskWorkflowId(runId, 'http', 1),
        taskWorkflowId(runId, 'http', 2),
        ...[0, 1, 2, 3, 4].map((item) => taskItemWorkflowId(runId, 'http', 3, item)),
        taskWorkflowId(runId, 'noop', 4),
      ];
      expect(rows.rows.map((row: { workflow_id: string }) => row.workflow_id).sort()).toEqual([...expected].sort());
      const keys = new Set(
        target.requests
          .slice(before)
          .filter((request) => request.url.startsWith('/slow'))
          .map((request) => request.headers['idempotency-key']),
      );
      expect(keys.size).toBe(8);
      for (const workflowId of expected) {
        let executions = 0;
        for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) executions += 1;
        expect(executions, workflowId).toBe(1);
      }
    } finally {
      await killHard(first.child);
      if (second !== undefined) await killHard(second.child);
    }
  });
});

describe('re-running a graph run from its failed task', () => {
  test('reuses the branch that succeeded and runs the failed task and what depends on it again', async () => {
    const worker = spawnWorkerProcess(stack.config);
    try {
      await worker.ready;
      const activity = await register({
        name: 'graph-rerun',
        triggers: [{ type: 'event', event_type: 'graph.rerun' }],
        tasks: [
          httpTask('steady', 'steady', { depends_on: [] }),
          httpTask('flaky', 'flaky', { depends_on: [], retry: { max_attempts: 1 } }),
          { type: 'noop', key: 'after', depends_on: ['flaky'] },
        ],
      });
      await inject('POST', '/v1/events', {
        event_id: 'graph-rerun-1',
        event_type: 'graph.rerun',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
      });
      const runId = runIdFor(eventRunWorkflowId(activity.id, 'graph-rerun-1'));
      const failed = await finished(runId);
      expect(failed.status).toBe('failed');
      expect(failed.tasks.map((task: { status: string }) => task.status)).toEqual(['succeeded', 'failed', 'skipped']);
      const steadyCalls = () => target.requests.filter((request) => request.url === '/steady').length;
      const before = steadyCalls();

      const rerun = await stack.api.server.inject({
        method: 'POST',
        url: `/v1/runs/${runId}/rerun`,
        headers: { 'idempotency-key': 'graph-rerun-1' },
        payload: { from: 'failed_task' },
      });
      expect(rerun.statusCode, rerun.body).toBeLessThan(300);
      const rerunId: string = rerun.json().run_id;
      const again = await finished(rerunId);
      expect(again.status).toBe('succeeded');
      // The steady branch is not called again: its recorded result stands in for it.
      expect(steadyCalls()).toBe(before);
      expect(again.tasks.map((task: { task_index: number }) => task.task_index).sort()).toEqual([1, 2]);
    } finally {
      await killHard(worker.child);
    }
  });
});

describe('a task that runs another activity', () => {
  test('starts the called activity’s run under an id derived from the calling run and task, waits for it, and links both runs', async () => {
    const worker = spawnWorkerProcess(stack.config);
    try {
      await worker.ready;
      const child = await register({
        name: 'called-child',
        tasks: [{ type: 'http', config: { method: 'GET', url: `${target.url}/child/{{ input.order }}` } }],
      });
      const parent = await register({
        name: 'calling-parent',
        triggers: [{ type: 'event', event_type: 'call.go' }],
        tasks: [
          {
            type: 'run_activity',
            key: 'refund',
            config: { activity: 'called-child', input: { order: '{{ event.data.order }}' } },
          },
          { type: 'noop', key: 'after', if: 'tasks.refund.result.status == "succeeded"' },
        ],
      });
      expect(
        (
          await inject('POST', '/v1/events', {
            event_id: 'call-1',
            event_type: 'call.go',
            source: 'tests',
            occurred_at: '2026-03-01T09:00:00Z',
            data: { order: 'o-7' },
          })
        ).statusCode,
      ).toBe(202);
      const parentRunId = runIdFor(eventRunWorkflowId(parent.id, 'call-1'));
      const run = await finished(parentRunId);
      expect(run.status).toBe('succeeded');
      const childWorkflowId = calledRunWorkflowId(child.id, parentRunId, 0);
      const childRunId = runIdFor(childWorkflowId);
      expect(run.tasks[0]).toMatchObject({
        status: 'succeeded',
        result: { run_id: childRunId, workflow_id: childWorkflowId, activity: 'called-child', status: 'succeeded' },
      });
      expect(run.tasks[0].result.tasks[0].result.body.path).toBe('/child/o-7');
      expect(run.tasks[1].status).toBe('succeeded');
      const called = (await inject('GET', `/v1/runs/${childRunId}`)).json();
      expect(called).toMatchObject({
        workflow_id: childWorkflowId,
        activity_id: child.id,
        trigger_type: 'call',
        parent_run_id: parentRunId,
        status: 'succeeded',
      });
      const caller = taskWorkflowId(parentRunId, 'run_activity', 0);
      await recordGoldenHistory(
        'task-workflow-run-activity',
        await stack.client.workflow.getHandle(caller).fetchHistory(),
        caller,
      );
      await recordGoldenHistory(
        'run-activity-workflow-called',
        await stack.client.workflow.getHandle(childWorkflowId).fetchHistory(),
        childWorkflowId,
      );
    } finally {
      await killHard(worker.child);
    }
  });

  test('a called run is cancelled when the calling run is', async () => {
    const worker = spawnWorkerProcess(stack.config);
    try {
      await worker.ready;
      const child = await register({ name: 'slow-child', tasks: [{ type: 'delay', config: { duration: '1h' } }] });
      const parent = await register({
        name: 'cancelled-parent',
        triggers: [{ type: 'event', event_type: 'call.cancel' }],
        tasks: [{ type: 'run_activity', config: { activity: child.id } }],
      });
      await inject('POST', '/v1/events', {
        event_id: 'call-cancel-1',
        event_type: 'call.cancel',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
      });
      const parentRunId = runIdFor(eventRunWorkflowId(parent.id, 'call-cancel-1'));
      const childRunId = runIdFor(calledRunWorkflowId(child.id, parentRunId, 0));
      await waitFor('the called run to be running', async () =>
        (await inject('GET', `/v1/runs/${childRunId}`)).json().status === 'running' ? true : undefined,
      );
      expect((await inject('POST', `/v1/runs/${parentRunId}/cancel`)).statusCode).toBe(202);
      const cancelled = await waitFor('the called run to be cancelled', async () => {
        const current = (await inject('GET', `/v1/runs/${childRunId}`)).json();
        return current.status === 'cancelled' ? current : undefined;
      });
      expect(cancelled.parent_run_id).toBe(parentRunId);
    } finally {
      await killHard(worker.child);
    }
  });

  test('registration refuses an activity that runs itself, directly or through others, naming the task', async () => {
    const direct = await inject('POST', '/v1/activities', {
      name: 'self-caller',
      tasks: [{ type: 'run_activity', config: { activity: 'self-caller' } }],
    });
    expect(direct.statusCode).toBe(400);
    expect(direct.json().errors[0]).toMatchObject({ path: 'tasks[0].config.activity' });
    await register({ name: 'loop-a', tasks: [{ type: 'run_activity', config: { activity: 'loop-b' } }] });
    await register({ name: 'loop-c', tasks: [{ type: 'run_activity', config: { activity: 'loop-a' } }] });
    const closing = await inject('POST', '/v1/activities', {
      name: 'loop-b',
      tasks: [{ type: 'run_activity', config: { activity: 'loop-c' } }],
    });
    expect(closing.statusCode, closing.body).toBe(400);
    expect(closing.json().errors[0]).toMatchObject({
      path: 'tasks[0].config.activity',
      message: expect.stringContaining('loop-b → loop-c → loop-a → loop-b'),
    });
  });
});
