import type { EventEnvelope, TaskWorkflowInput } from '@activity-core/contracts';
import { parseDurationMs } from '@activity-core/contracts/duration';
import { emittedEventId, taskInstanceIdFor } from '@activity-core/contracts/ids';
import {
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { BOOKKEEPING_OPTIONS, toTemporalRetry } from './activity-options';
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
      const http = proxyActivities<Activities>({
        // Room for the request's own timeout plus reading the body.
        startToCloseTimeout: timeoutMs + 10_000,
        retry: toTemporalRetry(task.retry ?? input.defaultRetry),
      });
      return await http.httpTask({
        taskInstanceId,
        taskWorkflowId: workflowId,
        runId: input.runId,
        config: task.config,
        context: input.context,
      });
    }
    case 'emit_event': {
      // Retried until the event is stored (it has a derived id, so retrying is safe); only
      // permanent errors (bad template, bad content) fail the task.
      const emit = proxyActivities<Activities>(BOOKKEEPING_OPTIONS);
      const envelope: EventEnvelope = {
        event_id: emittedEventId(input.runId, input.index),
        event_type: task.config.event_type,
        source: task.config.source,
        occurred_at: new Date(workflowInfo().runStartTime.getTime()).toISOString(),
        ...(task.config.subject === undefined ? {} : { subject: task.config.subject }),
        data: task.config.data,
      };
      return await emit.emitEvent({ envelope, context: input.context });
    }
  }
}
