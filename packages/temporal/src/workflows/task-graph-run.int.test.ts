/**
 * Graph runs on Temporal's time-skipping test server, with stub bookkeeping
 * and http activities (plain functions recording what the workflows asked)
 * and the real CEL evaluation. The end-to-end tests in test/task-graphs.int.test.ts
 * prove the same paths on the real stack.
 */
import { randomUUID } from 'node:crypto';
import {
  ActivityDefinition,
  manualRunWorkflowId,
  runIdFor,
  taskItemWorkflowId,
  taskWorkflowId,
  type RunActivityInput,
  type RunContext,
  type RunOutcome,
} from '@activity-core/contracts';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  startWorkflowTestEnvironment,
  stubEffects,
  type WorkflowTestEnvironment,
} from '../../test/workflow-test-environment';
import type { RecordTaskInput } from '../effects';
import { RUN_ACTIVITY_WORKFLOW } from '../names';

const records: RecordTaskInput[] = [];
const statuses: Array<{ runId: string; status: string; error?: unknown }> = [];
/** Every bookkeeping write in the order the workflows made them: `<run_id> task|run <status>`. */
const writes: string[] = [];
/** http calls per run: url, the context it was given, and how many calls of its run were in flight when it began. */
const httpCalls: Array<{ runId: string; url: string; context: RunContext; inFlight: number }> = [];
const inFlight = new Map<string, number>();

const activities = stubEffects({
  async logRun() {
    return { inserted: true };
  },
  async setRunStatus(input) {
    statuses.push(input);
    writes.push(`${input.runId} run ${input.status}`);
  },
  async recordTask(input) {
    records.push(input);
    writes.push(`${input.runId} task ${input.status}`);
  },
  async httpTask(input) {
    const now = (inFlight.get(input.runId) ?? 0) + 1;
    inFlight.set(input.runId, now);
    httpCalls.push({ runId: input.runId, url: input.config.url, context: input.context, inFlight: now });
    try {
      // Long enough that tasks started together overlap.
      await new Promise((resolve) => setTimeout(resolve, 150));
      if (input.config.url.endsWith('/fail'))
        throw ApplicationFailure.nonRetryable('the target answered 500', 'http_status');
      const item = input.context.item;
      return { status: 200, body: { url: input.config.url, ...(item === undefined ? {} : { item }) } };
    } finally {
      inFlight.set(input.runId, (inFlight.get(input.runId) ?? 1) - 1);
    }
  },
});

let testEnv: WorkflowTestEnvironment;

beforeAll(async () => {
  testEnv = await startWorkflowTestEnvironment(activities);
});

afterAll(async () => {
  await testEnv?.close();
});

function newRun(tasks: unknown[], extra: Record<string, unknown> = {}, data: Record<string, unknown> = {}) {
  const definition = ActivityDefinition.parse({ name: 'graph-test', tasks, ...extra });
  const activityId = randomUUID();
  const workflowId = manualRunWorkflowId(activityId, randomUUID());
  const runId = runIdFor(workflowId);
  const input: RunActivityInput = {
    activity: { id: activityId, name: 'graph-test', version: 1, definition },
    trigger: {
      type: 'event',
      event: {
        event_id: `e-${runId}`,
        event_type: 'order.created',
        source: 'shop',
        occurred_at: '2026-01-01T00:00:00.000Z',
        data,
      },
    },
  };
  return { workflowId, runId, input };
}

async function run(tasks: unknown[], extra: Record<string, unknown> = {}, data: Record<string, unknown> = {}) {
  const started = newRun(tasks, extra, data);
  const handle = await testEnv.env.client.workflow.start(RUN_ACTIVITY_WORKFLOW, {
    workflowId: started.workflowId,
    taskQueue: testEnv.taskQueue,
    args: [started.input],
  });
  const result = await handle.result().then(
    (outcome: RunOutcome) => ({ outcome, failure: undefined }),
    (failure: unknown) => ({ outcome: undefined, failure }),
  );
  const final = (index: number, item?: number) =>
    records
      .filter(
        (r) => r.runId === started.runId && r.taskIndex === index && r.itemIndex === item && r.status !== 'running',
      )
      .at(-1);
  return { ...started, ...result, final, calls: httpCalls.filter((call) => call.runId === started.runId) };
}

const http = (key: string, url: string, more: Record<string, unknown> = {}) => ({
  type: 'http',
  key,
  config: { url: `https://stub.invalid/${url}` },
  ...more,
});

describe('a graph run', () => {
  test('runs tasks that need nothing at once, and a join after all of them, with their results readable by key', async () => {
    const r = await run([
      http('a', 'a', { depends_on: [] }),
      http('b', 'b', { depends_on: [] }),
      http('c', 'c', { depends_on: [] }),
      {
        type: 'noop',
        key: 'join',
        depends_on: ['a', 'b', 'c'],
        if: 'tasks.a.result.status == 200 && tasks.c.status == "succeeded"',
      },
    ]);
    expect(r.failure).toBeUndefined();
    expect(r.outcome!.tasks.map((t) => t.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(Math.max(...r.calls.map((call) => call.inFlight))).toBe(3);
    expect(r.final(3)).toMatchObject({
      status: 'succeeded',
      taskKey: 'join',
      workflowId: taskWorkflowId(r.runId, 'noop', 3),
    });
  });

  test('skips a task whose condition is false, records the expression and its value, and runs what depends on it', async () => {
    const r = await run([
      http('score', 'score', { depends_on: [] }),
      { type: 'noop', key: 'notify', depends_on: ['score'], if: 'tasks.score.result.status != 200' },
      { type: 'noop', key: 'after', depends_on: ['notify'] },
    ]);
    expect(r.outcome!.status).toBe('succeeded');
    expect(r.final(1)).toMatchObject({
      status: 'skipped',
      taskKey: 'notify',
      detail: { reason: 'condition_false', expression: 'tasks.score.result.status != 200', value: false },
    });
    expect(r.final(2)).toMatchObject({ status: 'succeeded' });
  });

  test('after a failure: dependents are skipped, all_done and any_failed tasks run, an independent branch finishes, and the run fails', async () => {
    const r = await run([
      http('work', 'fail', { depends_on: [] }),
      { type: 'noop', key: 'next', depends_on: ['work'] },
      { type: 'noop', key: 'cleanup', depends_on: ['next'], trigger_rule: 'all_done' },
      { type: 'noop', key: 'alert', depends_on: ['next'], trigger_rule: 'any_failed' },
      http('other', 'other', { depends_on: [] }),
    ]);
    expect(r.failure).toBeInstanceOf(WorkflowFailedError);
    expect(r.final(1)).toMatchObject({ status: 'skipped', detail: { reason: 'need_failed', needs: [0] } });
    expect(r.final(2)).toMatchObject({ status: 'succeeded' });
    expect(r.final(3)).toMatchObject({ status: 'succeeded' });
    expect(r.final(4)).toMatchObject({ status: 'succeeded' });
    expect(statuses.filter((s) => s.runId === r.runId)).toEqual([
      expect.objectContaining({ status: 'failed', error: expect.objectContaining({ task_index: 0 }) }),
    ]);
  });

  test('fans a task out over a list: one task workflow per item, at most max_parallel at once, the results in item order', async () => {
    const items = ['a', 'b', 'c', 'd', 'e'];
    const r = await run(
      [
        http('each', 'item/{{ item }}', { depends_on: [], for_each: 'event.data.skus', max_parallel: 2 }),
        { type: 'noop', key: 'done', if: 'size(tasks.each.result) == 5' },
      ],
      {},
      { skus: items },
    );
    expect(r.failure).toBeUndefined();
    expect(r.outcome!.tasks[1]!.status).toBe('succeeded');
    expect(Math.max(...r.calls.map((call) => call.inFlight))).toBe(2);
    expect(r.outcome!.tasks[0]!.result).toEqual(
      items.map((item) => ({ status: 200, body: { url: 'https://stub.invalid/item/{{ item }}', item } })),
    );
    for (const [item] of items.entries())
      expect(r.final(0, item)).toMatchObject({
        status: 'succeeded',
        workflowId: taskItemWorkflowId(r.runId, 'http', 0, item),
      });
    expect(r.calls.map((call) => call.context.item_index).sort()).toEqual([0, 1, 2, 3, 4]);
  });

  test('fails a for_each task whose list is longer than the limit, naming the limit, without starting any item', async () => {
    const r = await run(
      [{ type: 'noop', key: 'each', for_each: 'event.data.many' }],
      {},
      {
        many: Array.from({ length: 1001 }, (_, i) => i),
      },
    );
    expect(r.failure).toBeInstanceOf(WorkflowFailedError);
    expect(r.final(0)).toMatchObject({
      status: 'failed',
      error: { message: expect.stringContaining('the limit is 1000') },
    });
    expect(records.filter((rec) => rec.runId === r.runId && rec.itemIndex !== undefined)).toEqual([]);
  });

  test('fails a task whose condition cannot be evaluated, and says why', async () => {
    const r = await run([{ type: 'noop', key: 'x', depends_on: [], if: 'event.data.missing > 1.0' }]);
    expect(r.failure).toBeInstanceOf(WorkflowFailedError);
    expect(r.final(0)).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('if:') } });
  });

  test('keeps a bound on the task workflows of one run: max_parallel 2 runs three branches two at a time', async () => {
    const r = await run(
      [http('a', 'a', { depends_on: [] }), http('b', 'b', { depends_on: [] }), http('c', 'c', { depends_on: [] })],
      { max_parallel: 2 },
    );
    expect(r.outcome!.status).toBe('succeeded');
    expect(Math.max(...r.calls.map((call) => call.inFlight))).toBe(2);
  });
});

describe('a graph run, re-run and cancelled', () => {
  test('a re-run that reuses the first task of a chain goes on to the task after it (nothing else is running to wake it)', async () => {
    const started = newRun([http('a', 'a', { depends_on: [] }), http('b', 'b')]);
    started.input.resume = {
      from_index: 1,
      prior: [{ index: 0, type: 'http', workflow_id: 'task-earlier', status: 'succeeded', result: { reused: true } }],
    };
    const handle = await testEnv.env.client.workflow.start(RUN_ACTIVITY_WORKFLOW, {
      workflowId: started.workflowId,
      taskQueue: testEnv.taskQueue,
      args: [started.input],
    });
    const outcome: RunOutcome = await handle.result();
    expect(outcome.tasks.map((task) => task.status)).toEqual(['succeeded', 'succeeded']);
    expect(outcome.tasks[0]!.result).toEqual({ reused: true });
    const calls = httpCalls.filter((call) => call.runId === started.runId);
    expect(calls.map((call) => call.url)).toEqual(['https://stub.invalid/b']);
    expect(calls[0]!.context.tasks).toMatchObject({ a: { status: 'succeeded', result: { reused: true } } });
  });

  test('a cancelled graph run records cancelled only after the task workflows it was running have stopped', async () => {
    const started = newRun([
      { type: 'delay', key: 'a', depends_on: [], config: { duration: '1h' } },
      { type: 'delay', key: 'b', depends_on: [], config: { duration: '1h' } },
    ]);
    const handle = await testEnv.env.client.workflow.start(RUN_ACTIVITY_WORKFLOW, {
      workflowId: started.workflowId,
      taskQueue: testEnv.taskQueue,
      args: [started.input],
    });
    const running = () => records.filter((r) => r.runId === started.runId && r.status === 'running').length;
    for (let i = 0; i < 200 && running() < 2; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(running()).toBe(2);
    await handle.cancel();
    // Polled, not awaited through result(): waiting on a result lets the test server skip time, which
    // would fire the hour-long timers before the cancellation is processed.
    for (let i = 0; i < 400 && !writes.includes(`${started.runId} run cancelled`); i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    const ofRun = writes
      .filter((write) => write.startsWith(started.runId))
      .map((write) => write.slice(started.runId.length + 1));
    // Both task workflows stopped (and recorded it) before the run recorded `cancelled`.
    expect(ofRun.slice(-3)).toEqual(['task cancelled', 'task cancelled', 'run cancelled']);
  });

  test('a task after one skipped by its condition reads the skipped result as null', async () => {
    const r = await run([
      { type: 'noop', key: 'maybe', depends_on: [], if: 'false' },
      { type: 'noop', key: 'after', depends_on: ['maybe'], if: 'tasks.maybe.result == null' },
    ]);
    expect(r.outcome!.tasks.map((task) => task.status)).toEqual(['skipped', 'succeeded']);
  });
});
