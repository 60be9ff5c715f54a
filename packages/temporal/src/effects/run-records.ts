import { toScheduledFor, type RunStatus, type TriggerType } from '@activity-core/contracts';
import type { ErrorInfo, RunsRepository, TaskInstanceUpsert } from '@activity-core/db';
import type { RunOutcomeAnnouncer } from './run-outcome-events';

export interface LogRunInput {
  runId: string;
  workflowId: string;
  activityId: string;
  activityVersion: number;
  triggerType: TriggerType;
  scheduledFor?: string;
  eventId?: string;
  windowStart?: string;
  windowEnd?: string;
  /** Only for runs started by a `run_activity` task. */
  parentRunId?: string;
  /** The Temporal priority the run was started with (1 highest … 5); absent when its start named none. */
  priority?: number;
  /** The Temporal fairness key the run was started with; absent when its start named none. */
  fairnessKey?: string;
}

/** A task instance write, exactly as the repository takes it. */
export type RecordTaskInput = TaskInstanceUpsert;

/** The payload's fire times (`scheduledFor`, `windowStart`, `windowEnd`) are `scheduled_for` strings; read with the one fire-time reader. */
const fireTimeOrNull = (value: string | undefined): Date | null => (value === undefined ? null : toScheduledFor(value));

/**
 * Bookkeeping effects: every write is idempotent, so Temporal may retry them freely.
 * With an `announcer`, a run recorded `failed` or `cancelled` is announced by a system event
 * (`activity_core.run.failed` / `.cancelled`) right after the write, on every attempt: the event's
 * id is derived from the run, so however often the write is repeated (retry, crash after the
 * write, replay, reset) the events table keeps one event and routes it once.
 */
export function createRunRecordEffects(deps: {
  runs: Pick<RunsRepository, 'insertRun' | 'setRunStatus' | 'upsertTaskInstance'>;
  announcer?: Pick<RunOutcomeAnnouncer, 'announce'>;
}) {
  return {
    /** `log_run`: INSERT ... ON CONFLICT DO NOTHING on the deterministic run id. */
    async logRun(input: LogRunInput): Promise<{ inserted: boolean }> {
      return await deps.runs.insertRun({
        runId: input.runId,
        workflowId: input.workflowId,
        activityId: input.activityId,
        activityVersion: input.activityVersion,
        triggerType: input.triggerType,
        scheduledFor: fireTimeOrNull(input.scheduledFor),
        eventId: input.eventId ?? null,
        windowStart: fireTimeOrNull(input.windowStart),
        windowEnd: fireTimeOrNull(input.windowEnd),
        ...(input.parentRunId === undefined ? {} : { parentRunId: input.parentRunId }),
        ...(input.priority === undefined ? {} : { priority: input.priority }),
        ...(input.fairnessKey === undefined ? {} : { fairnessKey: input.fairnessKey }),
      });
    },

    async setRunStatus(input: {
      runId: string;
      status: Exclude<RunStatus, 'running'>;
      error?: ErrorInfo | null;
    }): Promise<void> {
      await deps.runs.setRunStatus(input.runId, input.status, input.error ?? null);
      // Not only when this write changed the row: the attempt that wrote it may have died before announcing.
      if (input.status === 'failed' || input.status === 'cancelled') await deps.announcer?.announce(input.runId);
    },

    async recordTask(input: RecordTaskInput): Promise<void> {
      await deps.runs.upsertTaskInstance(input);
    },
  };
}
