import type { RunActivityInput, RunContext, RunOutcome, TaskOutcome } from '@activity-core/contracts';
import { runIdFor, taskWorkflowId } from '@activity-core/contracts/ids';
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
import type { Activities } from '../activities';
import { BOOKKEEPING_OPTIONS } from './activity-options';
import { describeFailure } from './failures';
import { TaskWorkflow } from './task-workflow';

const bookkeeping = proxyActivities<Activities>(BOOKKEEPING_OPTIONS);

const waitForExisting = proxyActivities<Activities>({
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
  return {
    run,
    activity: { id: activity.id, name: activity.name, version: activity.version },
    ...(trigger.type === 'event' ? { event: trigger.event } : {}),
    tasks: [],
  };
}

/**
 * One run of one activity for one trigger. Its workflow id is the run's
 * durable identity; the run id is derived from it, so replay, restart, retry
 * and reset all land on the same Postgres rows.
 */
export async function RunActivityWorkflow(input: RunActivityInput): Promise<RunOutcome> {
  const { workflowId } = workflowInfo();
  const runId = runIdFor(workflowId);
  const { activity, trigger } = input;

  await bookkeeping.logRun({
    runId,
    workflowId,
    activityId: activity.id,
    activityVersion: activity.version,
    triggerType: trigger.type,
    ...(trigger.type === 'event' ? { eventId: trigger.event.event_id } : {}),
    ...(trigger.type === 'cron' || trigger.type === 'backfill'
      ? { scheduledFor: trigger.scheduled_for, windowStart: trigger.window_start, windowEnd: trigger.window_end }
      : {}),
  });

  const context = contextFor(input, runId, workflowId);
  const outcomes: TaskOutcome[] = [];
  let firstFailure: TaskOutcome | undefined;
  try {
    for (const [index, task] of activity.definition.tasks.entries()) {
      const outcome = await runTask(input, runId, index, context);
      outcomes.push(outcome);
      context.tasks.push({ index, type: task.type, status: outcome.status, result: outcome.result });
      if (outcome.status === 'failed' && !task.continue_on_failure) {
        firstFailure = outcome;
        break;
      }
    }
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() => bookkeeping.setRunStatus({ runId, status: 'cancelled', error: null }));
    }
    throw error;
  }

  if (firstFailure !== undefined) {
    const message = `task ${firstFailure.index} (${firstFailure.type}) failed: ${firstFailure.error?.message ?? 'unknown error'}`;
    await bookkeeping.setRunStatus({ runId, status: 'failed', error: { message, task_index: firstFailure.index, task_workflow_id: firstFailure.workflowId } });
    throw ApplicationFailure.nonRetryable(message, 'run_failed');
  }
  await bookkeeping.setRunStatus({ runId, status: 'succeeded', error: null });
  return { runId, status: 'succeeded', tasks: outcomes };
}

async function runTask(input: RunActivityInput, runId: string, index: number, context: RunContext): Promise<TaskOutcome> {
  const task = input.activity.definition.tasks[index]!;
  const childId = taskWorkflowId(runId, task.type, index);
  const base = { index, type: task.type, workflowId: childId };
  try {
    const result = await executeChild(TaskWorkflow, {
      workflowId: childId,
      args: [{ runId, runWorkflowId: workflowInfo().workflowId, index, task, defaultRetry: input.activity.definition.retry, context: structuredCloneSafe(context) }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      staticSummary: `${input.activity.name} · task ${index}: ${task.name ?? task.type}`,
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
  return { ...context, tasks: context.tasks.map((entry) => ({ ...entry })) };
}
