import {
  formatScheduledFor,
  NotFoundError,
  UnavailableError,
  type RunRecord,
  type RunStatus,
  type EventWaitRecord,
  type RunWithTasks,
  type TaskInstanceRecord,
  type TriggerType,
} from '@activity-core/contracts';
import {
  decodeCursor,
  encodeCursor,
  type EventWaitRow,
  type EventWaitsRepository,
  type RunRow,
  type RunsRepository,
  type TaskInstanceRow,
} from '@activity-core/db';
import { isTemporalUnreachable } from '@activity-core/temporal/client';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { keysetPage, type Page } from './pagination';
import type { RerunService } from './rerun-service';

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

export function toRunRecord(row: RunRow & { notBefore?: Date | null }): RunRecord {
  return {
    run_id: row.runId,
    workflow_id: row.workflowId,
    activity_id: row.activityId,
    activity_version: row.activityVersion,
    trigger_type: row.triggerType as TriggerType,
    scheduled_for: row.scheduledFor === null ? null : formatScheduledFor(row.scheduledFor),
    event_id: row.eventId,
    window_start: iso(row.windowStart),
    window_end: iso(row.windowEnd),
    status: row.status as RunStatus,
    error: (row.error as RunRecord['error']) ?? null,
    started_at: row.startedAt.toISOString(),
    finished_at: iso(row.finishedAt),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    cancelled_by_event: row.cancelledByEvent,
    cancelled_by_run: row.cancelledByRun,
    ...(row.parentRunId === null ? {} : { parent_run_id: row.parentRunId }),
    priority: row.priority,
    fairness_key: row.fairnessKey,
    not_before: iso(row.notBefore ?? null),
  };
}

export function toTaskRecord(row: TaskInstanceRow): TaskInstanceRecord {
  return {
    id: row.id,
    run_id: row.runId,
    task_type: row.taskType,
    task_index: row.taskIndex,
    workflow_id: row.workflowId,
    status: row.status as TaskInstanceRecord['status'],
    attempt_count: row.attemptCount,
    result: row.result ?? null,
    error: (row.error as TaskInstanceRecord['error']) ?? null,
    started_at: iso(row.startedAt),
    finished_at: iso(row.finishedAt),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    ...(row.taskKey === null ? {} : { task_key: row.taskKey }),
    ...(row.itemIndex === null ? {} : { item_index: row.itemIndex }),
    ...(row.status === 'skipped' && row.detail !== null
      ? { skipped: row.detail as NonNullable<TaskInstanceRecord['skipped']> }
      : {}),
  };
}

export function toEventWaitRecord(row: EventWaitRow): EventWaitRecord {
  return {
    wait_id: row.waitId,
    status: row.status as EventWaitRecord['status'],
    event_type: row.eventType,
    match: row.match,
    matched_event_id: row.matchedEventId,
    signal: row.signalState as EventWaitRecord['signal'],
    detail: row.detail,
    registered_at: row.registeredAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    closed_at: iso(row.closedAt),
  };
}

export function createRunService(deps: {
  runs: RunsRepository;
  /** The waits of wait_for_event tasks, shown on their task (absent: not shown). */
  eventWaits?: Pick<EventWaitsRepository, 'listForRun'>;
  client: Client;
  temporalUiUrl: string;
  namespace: string;
  reruns: RerunService;
}) {
  async function requireRun(runId: string): Promise<RunRow> {
    const row = await deps.runs.getRun(runId);
    if (row === undefined) throw new NotFoundError('run', runId);
    return row;
  }

  return {
    async list(query: {
      limit: number;
      cursor?: string;
      activity_id?: string;
      status?: RunStatus;
      trigger_type?: TriggerType;
      event_id?: string;
    }): Promise<Page<RunRecord>> {
      return await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        decode: decodeCursor,
        encode: (last: RunRow) => encodeCursor({ createdAt: last.createdAt, id: last.runId }),
        fetch: ({ limit, cursor }) =>
          deps.runs.listRuns({
            limit,
            ...(cursor ? { cursor } : {}),
            ...(query.activity_id ? { activityId: query.activity_id } : {}),
            ...(query.status ? { status: query.status } : {}),
            ...(query.trigger_type ? { triggerType: query.trigger_type } : {}),
            ...(query.event_id ? { eventId: query.event_id } : {}),
          }),
        toItem: toRunRecord,
      });
    },

    async get(runId: string): Promise<RunWithTasks & RerunChain & { temporal_ui_url: string }> {
      const row = await requireRun(runId);
      const [tasks, waits] = await Promise.all([deps.runs.listTasks(runId), deps.eventWaits?.listForRun(runId) ?? []]);
      const waitOf = new Map(waits.map((wait) => [wait.waitId, toEventWaitRecord(wait)]));
      return {
        ...toRunRecord(row),
        tasks: tasks.map((task) => {
          const wait = waitOf.get(task.workflowId);
          return wait === undefined ? toTaskRecord(task) : { ...toTaskRecord(task), wait };
        }),
        ...(await deps.reruns.chainOf(row)),
        temporal_ui_url: `${deps.temporalUiUrl}/namespaces/${encodeURIComponent(deps.namespace)}/workflows/${encodeURIComponent(row.workflowId)}`,
      };
    },

    rerun: deps.reruns.rerun,
    bulkRerun: deps.reruns.bulk,
    getBulkRerun: deps.reruns.getBulk,

    /** Requests cancellation; the workflow records `cancelled` itself when it stops. */
    async cancel(runId: string): Promise<{ run_id: string; cancel_requested: boolean }> {
      const row = await requireRun(runId);
      // A run waiting for a slot (concurrency limit, overlap policy) is open too: cancelled, it leaves the queue.
      if (row.status !== 'running' && row.status !== 'waiting_for_slot')
        return { run_id: runId, cancel_requested: false };
      try {
        await deps.client.withDeadline(Date.now() + 5_000, () =>
          deps.client.workflow.getHandle(row.workflowId).cancel(),
        );
      } catch (error) {
        // Already closed in Temporal (terminated, timed out): nothing to cancel; the run reconciler records its end.
        if (error instanceof WorkflowNotFoundError) return { run_id: runId, cancel_requested: false };
        if (isTemporalUnreachable(error)) {
          throw new UnavailableError('Temporal is unreachable; the cancellation was not requested, retry later');
        }
        throw error;
      }
      return { run_id: runId, cancel_requested: true };
    },
  };
}

export type RunService = ReturnType<typeof createRunService>;

type RerunChain = Awaited<ReturnType<RerunService['chainOf']>>;
