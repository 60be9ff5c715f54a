import { toScheduledFor, type RunStatus, type TriggerType } from '@activity-core/contracts';
import type { ErrorInfo, RunsRepository, TaskInstanceUpsert } from '@activity-core/db';

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
}

/** A task instance write, exactly as the repository takes it. */
export type RecordTaskInput = TaskInstanceUpsert;

/** The payload's fire times (`scheduledFor`, `windowStart`, `windowEnd`) are `scheduled_for` strings; read with the one fire-time reader. */
const fireTimeOrNull = (value: string | undefined): Date | null => (value === undefined ? null : toScheduledFor(value));

/** Bookkeeping activities: every write is idempotent, so Temporal may retry them freely. */
export function createRunRecordActivities(deps: { runs: Pick<RunsRepository, 'insertRun' | 'setRunStatus' | 'upsertTaskInstance'> }) {
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
      });
    },

    async setRunStatus(input: { runId: string; status: Exclude<RunStatus, 'running'>; error?: ErrorInfo | null }): Promise<void> {
      await deps.runs.setRunStatus(input.runId, input.status, input.error ?? null);
    },

    async recordTask(input: RecordTaskInput): Promise<void> {
      await deps.runs.upsertTaskInstance(input);
    },
  };
}
