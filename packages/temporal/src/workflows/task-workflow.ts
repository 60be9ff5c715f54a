import type {
  EventEnvelope,
  RunActivityInput,
  RunOutcome,
  RunTrigger,
  TaskWorkflowInput,
} from '@activity-core/contracts';
import { parseDurationMs } from '@activity-core/contracts/duration';
import { calledRunWorkflowId, emittedEventId, runIdFor, taskInstanceIdFor } from '@activity-core/contracts/ids';
import {
  ActivityFailure,
  type ActivityOptions,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowFailure,
  condition,
  defineSignal,
  executeChild,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  ParentClosePolicy,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { RetryState, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Effects, EventWaitAnswer } from '../effects';
import type { EventWaitMatchedSignal } from '../client/wait-signaller';
import { EVENT_WAIT_MATCHED_SIGNAL, RUN_ACTIVITY_WORKFLOW } from '../names';
import { runSearchAttributes } from '../search-attributes';
import {
  BOOKKEEPING_OPTIONS,
  HTTP_TASK_CANCEL_OPTIONS,
  HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH,
  toTemporalRetry,
} from './effect-options';
import { bookkeepingForThisWorkflow } from './bookkeeping';
import { describeFailure } from './failures';

/**
 * One task of one run, as its own workflow `task-{run_id}:{task_type}:{index}`.
 * Records its task instance before and after, and fails (after recording the
 * failure) when the task fails, so the Temporal UI shows what went wrong.
 */
export async function TaskWorkflow(input: TaskWorkflowInput): Promise<unknown> {
  // Once, before the first write: records (or on replay finds) the patch marker (see bookkeeping.ts).
  const { local, books: bookkeeping } = bookkeepingForThisWorkflow();
  const { workflowId } = workflowInfo();
  const record = {
    id: taskInstanceIdFor(workflowId),
    runId: input.runId,
    taskType: input.task.type,
    taskIndex: input.index,
    workflowId,
    // Only graph runs' tasks carry these: every other task's writes stay what they were.
    ...(input.taskKey === undefined ? {} : { taskKey: input.taskKey }),
    ...(input.itemIndex === undefined ? {} : { itemIndex: input.itemIndex }),
  };
  // On local bookkeeping the `running` row is written even if a cancellation
  // arrives now (the task then records `cancelled` below); older histories
  // keep their cancellable write.
  const running = () => bookkeeping.recordTask({ ...record, status: 'running' });
  await (local ? CancellationScope.nonCancellable(running) : running());
  try {
    const result = await runTask(input, record.id, workflowId);
    // The work is done: record it even if a cancellation arrives now, so a late
    // "succeeded" write can never race a "cancelled" one.
    await CancellationScope.nonCancellable(() =>
      bookkeeping.recordTask({
        ...record,
        status: 'succeeded',
        result: result ?? null,
        attemptCount: input.task.type === 'http' ? undefined : 1,
      }),
    );
    return result ?? null;
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() => bookkeeping.recordTask({ ...record, status: 'cancelled' }));
      throw error;
    }
    const failure = describeFailure(error);
    await CancellationScope.nonCancellable(() =>
      bookkeeping.recordTask({
        ...record,
        status: 'failed',
        error: failure,
        attemptCount: input.task.type === 'http' ? undefined : 1,
      }),
    );
    throw ApplicationFailure.nonRetryable(failure.message, failure.type ?? 'task_failed');
  }
}

async function runTask(input: TaskWorkflowInput, taskInstanceId: string, workflowId: string): Promise<unknown> {
  const { task } = input;
  switch (task.type) {
    case 'noop':
      return null;
    case 'delay':
      // A durable timer: survives worker restarts; no worker is busy while it waits.
      await sleep(parseDurationMs(task.config.duration));
      return null;
    case 'http': {
      const timeoutMs = parseDurationMs(task.config.timeout);
      const options: ActivityOptions = {
        // Room for the request's own timeout plus reading the body.
        startToCloseTimeout: timeoutMs + 10_000,
        retry: toTemporalRetry(task.retry ?? input.defaultRetry),
      };
      // Tasks recorded before the patch keep the default TRY_CANCEL (no heartbeat timeout): a cancellation
      // ended them at once, whatever their attempt was doing. Only http tasks get the marker.
      const waitsForAttempt = patched(HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH);
      const http = proxyActivities<Effects>(waitsForAttempt ? { ...options, ...HTTP_TASK_CANCEL_OPTIONS } : options);
      const attempt = http.httpTask({
        taskInstanceId,
        taskWorkflowId: workflowId,
        runId: input.runId,
        config: task.config,
        context: input.context,
      });
      if (!waitsForAttempt) return await attempt;
      try {
        return await attempt;
      } catch (error) {
        // Once the task is cancelled Temporal retries nothing, and says so (retry state CANCEL_REQUESTED) when
        // the attempt in flight then fails or times out (a worker that died) instead of stopping as cancelled:
        // the task is cancelled all the same. An attempt that completes first is the task's result.
        if (
          error instanceof ActivityFailure &&
          error.retryState === RetryState.CANCEL_REQUESTED &&
          !isCancellation(error)
        )
          throw new CancelledFailure('the task was cancelled; its last attempt ended without completing', [], error);
        throw error;
      }
    }
    case 'emit_event': {
      // Retried until the event is stored (it has a derived id, so retrying is safe); only
      // permanent errors (bad template, bad content) fail the task.
      const emit = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);
      const envelope: EventEnvelope = {
        event_id: emittedEventId(input.runId, input.index, input.itemIndex),
        event_type: task.config.event_type,
        source: task.config.source,
        occurred_at: new Date(workflowInfo().runStartTime.getTime()).toISOString(),
        ...(task.config.subject === undefined ? {} : { subject: task.config.subject }),
        data: task.config.data,
      };
      return await emit.emitEvent({ envelope, context: input.context });
    }
    case 'wait_for_event':
      return await waitForEvent(input, task.config, workflowId);
    case 'run_activity':
      return await runCalledActivity(input, task.config);
  }
}

/**
 * `run_activity`: looks the activity up and renders the input (one
 * activity), then starts its run as a child workflow with the id derived from
 * this run and task, and waits. A cancelled task cancels the called run
 * (REQUEST_CANCEL); a run already started under that id (a retried or reset
 * task) is waited for, never started twice. New code path: no existing
 * history reaches it.
 */
async function runCalledActivity(
  input: TaskWorkflowInput,
  config: Extract<TaskWorkflowInput['task'], { type: 'run_activity' }>['config'],
): Promise<unknown> {
  const calls = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);
  const prepared = await calls.prepareCalledRun({
    activity: config.activity,
    input: config.input,
    context: input.context,
    taskIndex: input.index,
    ...(input.itemIndex === undefined ? {} : { itemIndex: input.itemIndex }),
  });
  if (!prepared.ok) throw ApplicationFailure.nonRetryable(prepared.message, 'run_activity_refused');
  const { activity } = prepared;
  const childId = calledRunWorkflowId(activity.id, input.runId, input.index, input.itemIndex);
  const runId = runIdFor(childId);
  const trigger: RunTrigger = {
    type: 'call',
    parent: {
      run_id: input.runId,
      workflow_id: input.runWorkflowId,
      activity_id: input.context.activity.id,
      task_index: input.index,
      ...(input.itemIndex === undefined ? {} : { item_index: input.itemIndex }),
    },
    input: prepared.input,
    chain: prepared.chain,
    root_run_id: prepared.rootRunId,
  };
  let outcome: RunOutcome;
  try {
    outcome = await executeChild<(runInput: RunActivityInput) => Promise<RunOutcome>>(RUN_ACTIVITY_WORKFLOW, {
      workflowId: childId,
      args: [{ activity, trigger }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      ...(activity.definition.run_timeout === undefined
        ? {}
        : { workflowExecutionTimeout: parseDurationMs(activity.definition.run_timeout) }),
      typedSearchAttributes: runSearchAttributes({
        activityId: activity.id,
        activityName: activity.name,
        triggerType: 'call',
      }),
      staticSummary: `${activity.name} · called by run ${input.runId} (task ${input.index})`,
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) {
      // A called run may take as long as it likes: waited for with a heartbeat, like a task workflow found running.
      const waiting = proxyActivities<Effects>({
        startToCloseTimeout: '7 days',
        heartbeatTimeout: '30 seconds',
        retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
      });
      const existing = await waiting.awaitTaskWorkflow({ workflowId: childId });
      if (existing.status === 'failed')
        throw ApplicationFailure.nonRetryable(
          `the called run failed: ${existing.error?.message ?? 'unknown error'}`,
          'called_run_failed',
        );
      outcome = existing.result as RunOutcome;
    } else if (error instanceof ChildWorkflowFailure && !isCancellation(error)) {
      throw ApplicationFailure.nonRetryable(
        `the called run failed: ${describeFailure(error).message}`,
        'called_run_failed',
      );
    } else throw error;
  }
  return calledRunResult(runId, childId, activity.name, outcome);
}

/** What the tasks after a `run_activity` task read: the run, its status and each task's result by index (and key). */
function calledRunResult(runId: string, workflowId: string, activity: string, outcome: RunOutcome): unknown {
  return {
    run_id: runId,
    workflow_id: workflowId,
    activity,
    status: outcome.status,
    tasks: outcome.tasks.map((task) => ({ index: task.index, status: task.status, result: task.result ?? null })),
  };
}

/** Router → waiting task: the event that matched this task's wait (see client/wait-signaller.ts). */
export const eventWaitMatchedSignal = defineSignal<[EventWaitMatchedSignal]>(EVENT_WAIT_MATCHED_SIGNAL);

/** What a `wait_for_event` task returns when no event matched in time. */
const TIMED_OUT = { status: 'timed_out' } as const;

/** The envelope's fields, as a later task's templates read them (`{{ tasks.N.result.data.… }}`). */
function envelopeResult(event: EventEnvelope): EventEnvelope {
  return {
    event_id: event.event_id,
    event_type: event.event_type,
    source: event.source,
    ...(event.subject === undefined ? {} : { subject: event.subject }),
    occurred_at: event.occurred_at,
    data: event.data,
  };
}

function matchedResult(answer: Extract<EventWaitAnswer, { status: 'matched' }>): unknown {
  // The event was forgotten by retention between the match and this read (only with EVENT_RETENTION_DAYS).
  return answer.event === null ? { event_id: answer.eventId } : envelopeResult(answer.event);
}

/**
 * `wait_for_event`: registers the wait in Postgres, then waits (a durable
 * condition with a timer; no worker is busy) for the router's signal. The
 * row is the decision: an event that matched it before the timeout was
 * recorded wins over the timeout, and a timeout or cancellation closes it.
 * Registration and closing are not cancellable, so a cancelled run never
 * leaves an open wait behind. New code path: no existing history reaches it.
 */
async function waitForEvent(
  input: TaskWorkflowInput,
  config: Extract<TaskWorkflowInput['task'], { type: 'wait_for_event' }>['config'],
  workflowId: string,
): Promise<unknown> {
  let received: EventWaitMatchedSignal | undefined;
  // Set before the wait is registered: a signal can only follow the registration, and none is missed.
  setHandler(eventWaitMatchedSignal, (signal) => {
    if (received === undefined && signal.waitId === workflowId) received = signal;
  });
  const waits = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);
  const timeoutMs = parseDurationMs(config.timeout);
  const registered = await CancellationScope.nonCancellable(() =>
    waits.registerEventWait({
      waitId: workflowId,
      runId: input.runId,
      activityId: input.context.activity.id,
      taskIndex: input.index,
      eventType: config.event_type,
      ...(config.sources === undefined ? {} : { sources: config.sources }),
      ...(config.match === undefined ? {} : { match: config.match }),
      ...(input.context.event === undefined ? {} : { triggerEvent: input.context.event }),
      timeoutMs,
    }),
  );
  // A registration repeated (a reset) finds the wait already decided.
  if (registered.status === 'matched') return matchedResult(registered);
  if (registered.status !== 'waiting') return TIMED_OUT;
  let arrived: boolean;
  try {
    arrived = await condition(() => received !== undefined, timeoutMs);
  } catch (error) {
    if (isCancellation(error))
      await CancellationScope.nonCancellable(() => waits.closeEventWait({ waitId: workflowId, status: 'cancelled' }));
    throw error;
  }
  if (arrived && received !== undefined) return envelopeResult(received.event);
  const closed = await CancellationScope.nonCancellable(() =>
    waits.closeEventWait({ waitId: workflowId, status: 'timed_out' }),
  );
  // An event matched just before the timeout: its signal is on its way, and the match stands.
  if (closed.status === 'matched')
    return received === undefined ? matchedResult(closed) : envelopeResult(received.event);
  return TIMED_OUT;
}
