import type { RunActivityInput, RunContext, RunContextTask, RunOutcome, TaskOutcome } from '@activity-core/contracts';
import { runIdFor, taskWorkflowId } from '@activity-core/contracts/ids';
import { usesTaskGraph } from '@activity-core/contracts/task-graph';
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Effects } from '../effects';
import { bookkeepingForThisWorkflow, type Bookkeeping } from './bookkeeping';
import { withConcurrencySlot } from './concurrency-coordinator';
import { describeFailure } from './failures';
import { overlapOf } from './concurrency-slots';
import { withOverlapSlot } from './overlap';
import { ActivityIdKey } from '../search-attributes';
import { recordedPriority } from './run-priority';
import { runTaskGraph, type StartTaskWorkflow } from './task-graph-run';
import { TaskWorkflow } from './task-workflow';

const waitForExisting = proxyActivities<Effects>({
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

function contextFor(input: RunActivityInput, runId: string, workflowId: string): RunContext {
  const { activity, trigger } = input;
  const run: RunContext['run'] = { run_id: runId, workflow_id: workflowId, trigger_type: trigger.type };
  if (trigger.type === 'cron' || trigger.type === 'backfill') {
    run.scheduled_for = trigger.scheduled_for;
    run.window_start = trigger.window_start;
    run.window_end = trigger.window_end;
  }
  // Carried to emit_event tasks so an emitted event counts one hop more. Only
  // present when non-zero: adds nothing to runs of external events (and
  // changes no command, so old histories replay as they were).
  if (trigger.type === 'event' && trigger.hops !== undefined && trigger.hops > 0) run.event_hops = trigger.hops;
  if (trigger.type === 'call') {
    run.parent_run_id = trigger.parent.run_id;
    run.call_chain = trigger.chain;
    run.call_root_run_id = trigger.root_run_id;
  }
  return {
    run,
    activity: { id: activity.id, name: activity.name, version: activity.version },
    ...(trigger.type === 'event' ? { event: trigger.event } : {}),
    // A batch's run: every member (docs/coalescing.md, "Batching"); absent otherwise, so other runs' contexts are unchanged.
    ...(trigger.type === 'event' && trigger.events !== undefined ? { events: trigger.events } : {}),
    ...(trigger.type === 'call' ? { input: trigger.input } : {}),
    tasks: [],
  };
}

/**
 * One run of one activity for one trigger. Its workflow id is the run's
 * durable identity; the run id is derived from it, so replay, restart, retry
 * and reset all land on the same Postgres rows.
 */
export async function RunActivityWorkflow(input: RunActivityInput): Promise<RunOutcome> {
  // Input-driven: only cron runs of a trigger with an overlap policy wait for
  // the trigger's slot (then for a concurrency slot, when there is a limit), and
  // only definitions with `concurrency` wait for a slot, so every history
  // recorded without them replays to the very same commands.
  const overlap = overlapOf(input);
  if (overlap !== undefined) return await withOverlapSlot(input, overlap, () => withConcurrencyIfAny(input));
  return await withConcurrencyIfAny(input);
}

async function withConcurrencyIfAny(input: RunActivityInput): Promise<RunOutcome> {
  if (input.activity.definition.concurrency !== undefined)
    return await withConcurrencySlot(input, () => runActivity(input));
  return await runActivity(input);
}

async function runActivity(input: RunActivityInput): Promise<RunOutcome> {
  const { workflowId } = workflowInfo();
  const runId = runIdFor(workflowId);
  const { activity, trigger } = input;
  // Once, before the first write: records (or on replay finds) the patch marker (see bookkeeping.ts).
  const { local, books } = bookkeepingForThisWorkflow();
  // Runs on local bookkeeping record their start and their end even when a
  // cancellation arrives at that moment: the row then always ends `cancelled`
  // or with the outcome the tasks reached. Older runs keep the shape they were
  // recorded with (their writes were cancellable).
  const record = local
    ? <T>(write: () => Promise<T>) => CancellationScope.nonCancellable(write)
    : <T>(write: () => Promise<T>) => write();

  await record(() =>
    books.logRun({
      runId,
      workflowId,
      activityId: activity.id,
      activityVersion: activity.version,
      triggerType: trigger.type,
      ...(trigger.type === 'event' ? { eventId: trigger.event.event_id } : {}),
      ...(trigger.type === 'cron' || trigger.type === 'backfill'
        ? { scheduledFor: trigger.scheduled_for, windowStart: trigger.window_start, windowEnd: trigger.window_end }
        : {}),
      ...(trigger.type === 'call' ? { parentRunId: trigger.parent.run_id } : {}),
      ...recordedPriority(),
    }),
  );

  const context = contextFor(input, runId, workflowId);
  if (usesTaskGraph(activity.definition.tasks)) return await runGraph(input, runId, context, books, record);
  const outcomes: TaskOutcome[] = [];
  let firstFailure: TaskOutcome | undefined;
  try {
    for (const [index, task] of activity.definition.tasks.entries()) {
      // A re-run from the failed task: the tasks before it are not executed again; their
      // recorded outcomes stand in for them (absent `resume`: every task runs, as always).
      const prior =
        input.resume !== undefined && index < input.resume.from_index
          ? input.resume.prior.find((entry) => entry.index === index)
          : undefined;
      const outcome =
        prior !== undefined
          ? { index, type: task.type, workflowId: prior.workflow_id, status: prior.status, result: prior.result }
          : await runTask(input, runId, { index, workflowId: taskWorkflowId(runId, task.type, index), context });
      outcomes.push(outcome);
      (context.tasks as RunContextTask[]).push({
        index,
        type: task.type,
        status: outcome.status,
        result: outcome.result,
      });
      if (outcome.status === 'failed' && !task.continue_on_failure) {
        firstFailure = outcome;
        break;
      }
    }
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() => books.setRunStatus({ runId, status: 'cancelled', error: null }));
    }
    throw error;
  }

  return await finishRun(runId, outcomes, firstFailure, books, record);
}

/** Records the run's end: failed, naming its first failed task, or succeeded. Both paths end here. */
async function finishRun(
  runId: string,
  outcomes: TaskOutcome[],
  firstFailure: TaskOutcome | undefined,
  books: Bookkeeping,
  record: <T>(write: () => Promise<T>) => Promise<T>,
): Promise<RunOutcome> {
  if (firstFailure !== undefined) {
    const message = `task ${firstFailure.index} (${firstFailure.type}) failed: ${firstFailure.error?.message ?? 'unknown error'}`;
    const error = { message, task_index: firstFailure.index, task_workflow_id: firstFailure.workflowId };
    await record(() => books.setRunStatus({ runId, status: 'failed', error }));
    throw ApplicationFailure.nonRetryable(message, 'run_failed');
  }
  await record(() => books.setRunStatus({ runId, status: 'succeeded', error: null }));
  return { runId, status: 'succeeded', tasks: outcomes };
}

/**
 * The graph path: every task decided as its needs settle, branches in
 * parallel (task-graph-run.ts). The run fails, once every task has settled,
 * when a task failed without `continue_on_failure`.
 */
async function runGraph(
  input: RunActivityInput,
  runId: string,
  context: RunContext,
  books: Bookkeeping,
  record: <T>(write: () => Promise<T>) => Promise<T>,
): Promise<RunOutcome> {
  let outcomes: TaskOutcome[];
  try {
    outcomes = await runTaskGraph({
      input,
      runId,
      context,
      books,
      record,
      startTask: (args) => runTask(input, runId, args),
    });
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() => books.setRunStatus({ runId, status: 'cancelled', error: null }));
    }
    throw error;
  }
  const tasks = input.activity.definition.tasks;
  const firstFailure = outcomes.find(
    (outcome) => outcome.status === 'failed' && !tasks[outcome.index]!.continue_on_failure,
  );
  return await finishRun(runId, outcomes, firstFailure, books, record);
}

async function runTask(
  input: RunActivityInput,
  runId: string,
  target: Parameters<StartTaskWorkflow>[0],
): Promise<TaskOutcome> {
  const { index, workflowId: childId, context, itemIndex, taskKey, graph } = target;
  const task = input.activity.definition.tasks[index]!;
  const base = { index, type: task.type, workflowId: childId };
  try {
    const result = await executeChild(TaskWorkflow, {
      workflowId: childId,
      args: [
        {
          runId,
          runWorkflowId: workflowInfo().workflowId,
          index,
          task,
          defaultRetry: input.activity.definition.retry,
          context: structuredCloneSafe(context),
          ...(itemIndex === undefined ? {} : { itemIndex }),
          ...(taskKey === undefined ? {} : { taskKey }),
        },
      ],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      // Only graph runs (a newer shape): straight-line runs start their tasks exactly as their histories recorded.
      ...(graph === true ? { typedSearchAttributes: [{ key: ActivityIdKey, value: input.activity.id }] } : {}),
      staticSummary: `${input.activity.name} · task ${index}${itemIndex === undefined ? '' : ` item ${itemIndex}`}: ${task.name ?? task.type}`,
    });
    return { ...base, status: 'succeeded', result };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) {
      // Already done or in flight (e.g. this run was reset): wait for it, never start it twice.
      const existing = await waitForExisting.awaitTaskWorkflow({ workflowId: childId });
      return { ...base, ...existing };
    }
    if (error instanceof ChildWorkflowFailure && !isCancellation(error)) {
      return { ...base, status: 'failed', error: describeFailure(error) };
    }
    throw error;
  }
}

/** Context snapshots passed to children must not alias the parent's mutable array. */
function structuredCloneSafe(context: RunContext): RunContext {
  const tasks = Array.isArray(context.tasks)
    ? context.tasks.map((entry) => ({ ...entry }))
    : Object.fromEntries(Object.entries(context.tasks).map(([name, entry]) => [name, { ...entry }]));
  return { ...context, tasks };
}
