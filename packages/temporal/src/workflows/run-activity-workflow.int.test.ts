/**
 * The run and task workflows on Temporal's time-skipping test server, with
 * stub effects: plain functions that record what the workflows asked of
 * them. No Postgres and no HTTP: these tests prove the workflow logic (which
 * task runs, what is recorded, what the run returns) in isolation; the
 * end-to-end tests in test/ prove the same paths against the real effects.
 *
 * Durations in the definitions are real (hours, days): the test server skips
 * time while a test waits for a result, so a `delay: 2h` takes milliseconds.
 */
import { randomUUID } from 'node:crypto';
import {
  ActivityDefinition,
  manualRunWorkflowId,
  runIdFor,
  taskWorkflowId,
  type RunActivityInput,
  type RunContext,
  type RunOutcome,
  type TaskWorkflowInput,
} from '@activity-core/contracts';
import { ApplicationFailure } from '@temporalio/common';
import {
  TimeoutFailure,
  WorkflowFailedError,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  startWorkflowTestEnvironment,
  stubEffects,
  until,
  type WorkflowTestEnvironment,
} from '../../test/workflow-test-environment';
import type { Effects, LogRunInput, RecordTaskInput } from '../effects';
import { createRunStarter } from '../client/run-starter';
import { RUN_ACTIVITY_WORKFLOW, TASK_WORKFLOW } from '../names';

const EventType = temporal.api.enums.v1.EventType;

/** An http task's stub fails when its url ends in /fail, and answers 200 otherwise. */
const FAIL_URL = 'https://stub.invalid/fail';
const OK_URL = 'https://stub.invalid/ok';

type Call =
  | { name: 'logRun'; input: LogRunInput }
  | { name: 'setRunStatus'; input: { runId: string; status: string; error?: unknown } }
  | { name: 'recordTask'; input: RecordTaskInput }
  | { name: 'httpTask'; input: { runId: string; taskWorkflowId: string; config: { url: string } } }
  | { name: 'awaitTaskWorkflow'; input: { workflowId: string } };

const calls: Call[] = [];
/** What the stub `awaitTaskWorkflow` answers, by task workflow id. */
const existingOutcomes = new Map<string, Awaited<ReturnType<Effects['awaitTaskWorkflow']>>>();

const effects: Effects = stubEffects({
  async logRun(input) {
    calls.push({ name: 'logRun', input });
    return { inserted: true };
  },
  async setRunStatus(input) {
    calls.push({ name: 'setRunStatus', input });
  },
  async recordTask(input) {
    calls.push({ name: 'recordTask', input });
  },
  async httpTask(input) {
    calls.push({ name: 'httpTask', input });
    if (input.config.url === FAIL_URL) throw ApplicationFailure.nonRetryable('the target answered 500', 'http_status');
    return { status: 200, body: { ok: true } };
  },
  async awaitTaskWorkflow(input) {
    calls.push({ name: 'awaitTaskWorkflow', input });
    const outcome = existingOutcomes.get(input.workflowId);
    if (outcome === undefined) throw ApplicationFailure.nonRetryable(`no outcome staged for ${input.workflowId}`);
    return outcome;
  },
});

let testEnv: WorkflowTestEnvironment;
let env: WorkflowTestEnvironment['env'];
let taskQueue: string;

beforeAll(async () => {
  testEnv = await startWorkflowTestEnvironment(effects);
  ({ env, taskQueue } = testEnv);
});

afterAll(async () => {
  await testEnv?.close();
});

/** A definition as registration stores it (defaults filled in). */
function definition(tasks: unknown[], extra: Record<string, unknown> = {}): ActivityDefinition {
  return ActivityDefinition.parse({ name: 'workflow-test', tasks, ...extra });
}

interface TestRun {
  workflowId: string;
  runId: string;
  input: RunActivityInput;
  taskId(type: string, index: number): string;
}

function newRun(def: ActivityDefinition): TestRun {
  const activityId = randomUUID();
  const workflowId = manualRunWorkflowId(activityId, 'test');
  const runId = runIdFor(workflowId);
  return {
    workflowId,
    runId,
    input: {
      activity: { id: activityId, name: 'workflow-test', version: 1, definition: def },
      trigger: { type: 'manual', key: 'test', requested_at: '2026-01-01T00:00:00.000Z' },
    },
    taskId: (type, index) => taskWorkflowId(runId, type, index),
  };
}

async function start(run: TestRun): Promise<WorkflowHandle> {
  return await env.client.workflow.start(RUN_ACTIVITY_WORKFLOW, {
    workflowId: run.workflowId,
    taskQueue,
    args: [run.input],
  });
}

/** Task records of one run, as `index:status`, in the order they were written. */
function taskRecords(runId: string): string[] {
  return calls.flatMap((call) =>
    call.name === 'recordTask' && call.input.runId === runId ? [`${call.input.taskIndex}:${call.input.status}`] : [],
  );
}

function runStatuses(runId: string): Array<{ status: string; error?: unknown }> {
  return calls.flatMap((call) =>
    call.name === 'setRunStatus' && call.input.runId === runId
      ? [{ status: call.input.status, error: call.input.error }]
      : [],
  );
}

/** Starts one task's workflow under the id the run will use for it, as a first attempt or a reset run left it. */
async function startTaskOutsideTheRun(run: TestRun, index: number): Promise<WorkflowHandleWithFirstExecutionRunId> {
  const task = run.input.activity.definition.tasks[index]!;
  const context: RunContext = {
    run: { run_id: run.runId, workflow_id: run.workflowId, trigger_type: 'manual' },
    activity: { id: run.input.activity.id, name: run.input.activity.name, version: run.input.activity.version },
    tasks: [],
  };
  return await env.client.workflow.start(TASK_WORKFLOW, {
    workflowId: run.taskId(task.type, index),
    taskQueue,
    args: [{ runId: run.runId, runWorkflowId: run.workflowId, index, task, context } satisfies TaskWorkflowInput],
  });
}

async function historyOf(workflowId: string) {
  return (await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

describe('RunActivityWorkflow', () => {
  test('a run of two tasks logs the run, records each task running then succeeded, and succeeds', async () => {
    const run = newRun(definition([{ type: 'noop' }, { type: 'http', config: { url: OK_URL } }]));
    const outcome: RunOutcome = await (await start(run)).result();

    expect(outcome).toMatchObject({ runId: run.runId, status: 'succeeded' });
    expect(outcome.tasks.map((t) => [t.index, t.status, t.workflowId])).toEqual([
      [0, 'succeeded', run.taskId('noop', 0)],
      [1, 'succeeded', run.taskId('http', 1)],
    ]);
    expect(outcome.tasks[1]?.result).toEqual({ status: 200, body: { ok: true } });
    expect(calls.filter((c) => c.name === 'logRun' && c.input.runId === run.runId)).toHaveLength(1);
    expect(taskRecords(run.runId)).toEqual(['0:running', '0:succeeded', '1:running', '1:succeeded']);
    expect(runStatuses(run.runId)).toEqual([{ status: 'succeeded', error: null }]);
  });

  test('a failing task marked continue_on_failure is recorded failed and the next task still runs', async () => {
    const run = newRun(
      definition([{ type: 'http', config: { url: FAIL_URL }, continue_on_failure: true }, { type: 'noop' }]),
    );
    const outcome: RunOutcome = await (await start(run)).result();

    expect(outcome.status).toBe('succeeded');
    expect(outcome.tasks.map((t) => t.status)).toEqual(['failed', 'succeeded']);
    expect(outcome.tasks[0]?.error).toMatchObject({ message: 'the target answered 500', type: 'http_status' });
    expect(taskRecords(run.runId)).toEqual(['0:running', '0:failed', '1:running', '1:succeeded']);
    expect(runStatuses(run.runId)).toEqual([{ status: 'succeeded', error: null }]);
  });

  test('a failing task without continue_on_failure fails the run and no later task starts', async () => {
    const run = newRun(definition([{ type: 'http', config: { url: FAIL_URL } }, { type: 'noop' }]));
    const handle = await start(run);

    const failure = await handle.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toMatchObject({
      type: 'run_failed',
      message: 'task 0 (http) failed: the target answered 500',
    });
    expect(taskRecords(run.runId)).toEqual(['0:running', '0:failed']);
    expect(runStatuses(run.runId)).toEqual([
      {
        status: 'failed',
        error: {
          message: 'task 0 (http) failed: the target answered 500',
          task_index: 0,
          task_workflow_id: run.taskId('http', 0),
        },
      },
    ]);
    const started = (await historyOf(run.workflowId)).filter(
      (e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    );
    expect(started.map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId)).toEqual([
      run.taskId('http', 0),
    ]);
  });

  test('a delay task holds the next task back for its whole duration', async () => {
    const run = newRun(definition([{ type: 'noop' }, { type: 'delay', config: { duration: '2h' } }, { type: 'noop' }]));
    const outcome: RunOutcome = await (await start(run)).result();
    expect(outcome.tasks.map((t) => t.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);

    const delay = await historyOf(run.taskId('delay', 1));
    const timer = delay.find((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED);
    expect(Number(timer?.timerStartedEventAttributes?.startToFireTimeout?.seconds)).toBe(7200);
    expect(delay.some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED)).toBe(true);

    // In the run's own history, the third task starts only after the delay task completed, 2h later.
    const parent = await historyOf(run.workflowId);
    const at = (e: temporal.api.history.v1.IHistoryEvent) => Number(e.eventTime?.seconds ?? 0);
    const delayDone = parent.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED &&
        e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId === run.taskId('delay', 1),
    );
    const lastStart = parent.find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED &&
        e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId === run.taskId('noop', 2),
    );
    const firstStart = parent.find(
      (e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    );
    expect(delayDone).toBeDefined();
    expect(Number(lastStart?.eventId)).toBeGreaterThan(Number(delayDone?.eventId));
    expect(at(lastStart!) - at(firstStart!)).toBeGreaterThanOrEqual(7200);
  });

  test('cancelling a run cancels its running task, records both cancelled, and starts no further task', async () => {
    const run = newRun(definition([{ type: 'delay', config: { duration: '1d' } }, { type: 'noop' }]));
    const handle = await start(run);
    await until('the delay task to be recorded running', () =>
      taskRecords(run.runId).includes('0:running') ? true : undefined,
    );

    await handle.cancel();
    // Waited for without handle.result(), which would let the test server skip time: the task's
    // day-long timer could then fire while the cancellation is still on its way to it.
    await until('the run to close', async () =>
      (await handle.describe()).status.name === 'RUNNING' ? undefined : true,
    );

    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect((await historyOf(run.workflowId)).at(-1)?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED);
    expect(taskRecords(run.runId)).toEqual(['0:running', '0:cancelled']);
    expect(runStatuses(run.runId)).toEqual([{ status: 'cancelled', error: null }]);
    const child = await env.client.workflow.getHandle(run.taskId('delay', 0)).describe();
    expect(child.status.name).toBe('CANCELLED');
  });

  test('a task whose workflow id is already taken is awaited, not started again, and its outcome is the task outcome', async () => {
    const run = newRun(definition([{ type: 'noop' }, { type: 'noop' }]));
    // The first task already ran (the run was reset, or its first attempt got this far).
    const existing = await startTaskOutsideTheRun(run, 0);
    await existing.result();
    existingOutcomes.set(run.taskId('noop', 0), { status: 'succeeded', result: 'from the first attempt' });

    const outcome: RunOutcome = await (await start(run)).result();

    expect(outcome.tasks.map((t) => [t.status, t.result ?? null])).toEqual([
      ['succeeded', 'from the first attempt'],
      ['succeeded', null],
    ]);
    expect(
      calls.filter((c) => c.name === 'awaitTaskWorkflow' && c.input.workflowId.includes(run.runId)).map((c) => c.input),
    ).toEqual([{ workflowId: run.taskId('noop', 0) }]);
    // The first task's workflow ran once: its records are the pre-existing execution's, not a second one's.
    expect(taskRecords(run.runId)).toEqual(['0:running', '0:succeeded', '1:running', '1:succeeded']);
    expect((await env.client.workflow.getHandle(run.taskId('noop', 0)).describe()).runId).toBe(
      existing.firstExecutionRunId,
    );
  });

  test('an already-started task that failed fails the run like a task that failed in it, and no later task starts', async () => {
    const run = newRun(definition([{ type: 'http', config: { url: FAIL_URL } }, { type: 'noop' }]));
    await expect(startTaskOutsideTheRun(run, 0).then((handle) => handle.result())).rejects.toBeInstanceOf(
      WorkflowFailedError,
    );
    // What the real activity reads from the failed workflow's result.
    existingOutcomes.set(run.taskId('http', 0), { status: 'failed', error: { message: 'the target answered 500' } });

    const failure = await (await start(run)).result().then(
      () => undefined,
      (error: unknown) => error,
    );

    expect((failure as WorkflowFailedError).cause).toMatchObject({
      type: 'run_failed',
      message: 'task 0 (http) failed: the target answered 500',
    });
    expect(runStatuses(run.runId)).toEqual([
      {
        status: 'failed',
        error: {
          message: 'task 0 (http) failed: the target answered 500',
          task_index: 0,
          task_workflow_id: run.taskId('http', 0),
        },
      },
    ]);
    // Only the first attempt's records: the task was not run again, and task 1 never started.
    expect(taskRecords(run.runId)).toEqual(['0:running', '0:failed']);
    expect(calls.filter((c) => c.name === 'httpTask' && c.input.runId === run.runId)).toHaveLength(1);
  });

  test('a run that exceeds its run_timeout times out, records no status of its own, and starts no further task', async () => {
    const run = newRun(
      definition([{ type: 'delay', config: { duration: '1d' } }, { type: 'noop' }], { run_timeout: '1h' }),
    );
    // Started as the run starter starts every run: run_timeout becomes the execution timeout.
    await expect(
      createRunStarter({ client: env.client, taskQueue }).start({
        workflowId: run.workflowId,
        activity: run.input.activity,
        trigger: run.input.trigger,
      }),
    ).resolves.toBe('started');

    const failure = await env.client.workflow
      .getHandle(run.workflowId)
      .result()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(TimeoutFailure);
    const history = await historyOf(run.workflowId);
    expect(Number(history[0]?.workflowExecutionStartedEventAttributes?.workflowExecutionTimeout?.seconds)).toBe(3600);
    expect(history.at(-1)?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT);
    // A timed-out workflow runs no more code: the run outcome recovery records the outcome (packages/temporal/test/run-outcome-recovery.int.test.ts).
    expect(runStatuses(run.runId)).toEqual([]);
    // The first task began; the second never did. (What the abandoned first task records later is
    // the test server's doing, which skips time on to its timer once the run is over.)
    expect(taskRecords(run.runId)[0]).toBe('0:running');
    expect(taskRecords(run.runId).filter((record) => !record.startsWith('0:'))).toEqual([]);
    // Temporal cancels the abandoned task because the run asked it to when it started the task
    // (the test server does not enforce parent close policies; the run outcome recovery test sees it done on a real one).
    const children = history.filter(
      (e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    );
    expect(
      children.map((e) => [
        e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId,
        e.startChildWorkflowExecutionInitiatedEventAttributes?.parentClosePolicy,
      ]),
    ).toEqual([[run.taskId('delay', 0), temporal.api.enums.v1.ParentClosePolicy.PARENT_CLOSE_POLICY_REQUEST_CANCEL]]);
  });
});
