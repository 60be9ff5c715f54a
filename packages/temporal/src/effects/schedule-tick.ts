/**
 * The activity behind `ScheduleTickWorkflow` (ADR 0010). The decision logic
 * lives in `@activity-core/schedule-manager`, which the worker injects; this
 * module only fixes the shapes that cross the Temporal boundary.
 */

/** What a Temporal Schedule passes its tick workflow (the schedule action's args). */
export interface ScheduleTickInput {
  activityId: string;
  triggerIndex: number;
  /** Definition version the schedule was last written for; a stale writer never overwrites a newer schedule. */
  definitionVersion: number;
  /** Fingerprint of the desired schedule; reconciliation compares it to decide whether to update. */
  revision: string;
}

export interface ProcessScheduleTickInput {
  activityId: string;
  triggerIndex: number;
  /**
   * The nominal fire time Temporal started the tick for
   * (`TemporalScheduledStartTime`), ISO 8601. Absent for a tick started by a
   * resume, which processes everything due up to now. The one fire time in a
   * payload that is neither named `scheduledFor` nor in the canonical form
   * (it is `Date.toISOString()`); histories carry it, so it stays as it is and
   * is read with `toScheduledFor` (ADR 0033).
   */
  nominalTime?: string;
  /** The tick workflow's id, recorded for traceability. */
  tickWorkflowId: string;
}

export interface ProcessScheduleTickResult {
  /** `processed`: decisions taken; `paused`: operator-paused, left for resume; `orphaned`: no such trigger any more (its schedule was removed). */
  status: 'processed' | 'paused' | 'orphaned';
  /** Workflow ids of the runs this tick started (or found already started). */
  runs: Array<{ workflowId: string; status: 'started' | 'duplicate' }>;
  /** Nominal times that got no run, by reason. */
  skipped: Record<string, number>;
}

export type ProcessScheduleTick = (input: ProcessScheduleTickInput) => Promise<ProcessScheduleTickResult>;

export function createScheduleTickEffects(deps: { processScheduleTick: ProcessScheduleTick }) {
  return {
    /**
     * Decides, under the trigger's row lock, what every nominal fire time due
     * by now gets (run or recorded skip, per the misfire policy), then starts
     * the runs with their deterministic ids. Safe to retry: decisions are
     * recorded once and starts are REJECT_DUPLICATE.
     */
    async processScheduleTick(input: ProcessScheduleTickInput): Promise<ProcessScheduleTickResult> {
      return await deps.processScheduleTick(input);
    },
  };
}
