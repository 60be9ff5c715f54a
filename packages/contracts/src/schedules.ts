/**
 * API shapes of the schedule manager (docs/schedules.md; endpoints in
 * docs/api.md, "Schedules"): cron schedules, their
 * fire decisions ("why did / didn't this run"), pause, resume, trigger and
 * backfill.
 *
 * Terminology
 * - schedule: the Temporal Schedule behind one cron trigger,
 *   `schedule-{activity_id}-{trigger_index}`.
 * - fire: one nominal fire time of a cron trigger and the decision taken for
 *   it — a run (`started`/`duplicate`, `pending` until Temporal confirmed) or
 *   a skip, always with a reason.
 */
import { z } from 'zod';
import { Rfc3339DateTime } from './date-time';
import { MisfirePolicy, PriorityOverride } from './activity-definition';

const Timestamp = z.string().meta({ format: 'date-time' });

/** One nominal fire time, in UTC (`scheduled_for` form) and on the trigger's wall clock. */
export const FireTimeView = z
  .object({
    utc: z.string().meta({ example: '2026-03-02T08:00:00+00:00' }),
    local: z.string().meta({ example: '2026-03-02T09:00:00+01:00' }),
  })
  .meta({ id: 'FireTime' });
export type FireTimeView = z.infer<typeof FireTimeView>;

/** What an activity response says about each of its cron triggers. */
export const CronScheduleSummary = z
  .object({
    trigger_index: z.number().int(),
    schedule_id: z.string(),
    cron: z.string(),
    timezone: z.string(),
    misfire_policy: MisfirePolicy,
    /** The next 5 nominal fire times; empty while the activity is disabled. */
    next_fire_times: z.array(FireTimeView),
  })
  .meta({ id: 'CronScheduleSummary' });
export type CronScheduleSummary = z.infer<typeof CronScheduleSummary>;

export const FireStatus = z.enum(['pending', 'started', 'duplicate', 'skipped']);
export type FireStatus = z.infer<typeof FireStatus>;

/**
 * Why a nominal fire time has a run (`on_time`, `misfire_catchup`,
 * `misfire_compress`, `backfill`) or has none (`misfire_skip`,
 * `catchup_limit`, `compressed`, `activity_disabled`, `trigger_changed`).
 */
export const FireReason = z.enum([
  'on_time',
  'misfire_catchup',
  'misfire_compress',
  'backfill',
  'misfire_skip',
  'catchup_limit',
  'compressed',
  'activity_disabled',
  'trigger_changed',
]);
export type FireReason = z.infer<typeof FireReason>;

export const FireRecord = z
  .object({
    trigger_index: z.number().int(),
    scheduled_for: z.string(),
    /** Set when this record stands for every nominal time from `scheduled_for` to `range_end`. */
    range_end: z.string().nullable(),
    status: FireStatus,
    reason: FireReason,
    trigger_type: z.enum(['cron', 'backfill']).nullable(),
    workflow_id: z.string().nullable(),
    run_id: z.string().nullable(),
    window_start: Timestamp.nullable(),
    window_end: Timestamp.nullable(),
    /** For `compressed`: the run whose window covers this time. */
    covered_by: z.string().nullable(),
    /** How long after the nominal time the decision was taken. */
    late_by_ms: z.number().int().nullable(),
    detail: z.string().nullable(),
    decided_at: Timestamp,
    /**
     * What became of the run (GET /v1/runs/{run_id} has the whole record): its
     * status, and its error when it has one — `skipped` with an `overlap`
     * error when the trigger's overlap policy skipped it. Null when the
     * decision started no run, or the run is not recorded yet.
     */
    // The run statuses and error shape of api.ts (which imports this module, so they are not imported from it).
    run_status: z
      .enum(['running', 'waiting_for_slot', 'succeeded', 'failed', 'cancelled', 'skipped'])
      .nullable()
      .optional(),
    run_error: z.object({ message: z.string(), type: z.string().optional() }).passthrough().nullable().optional(),
  })
  .meta({ id: 'FireRecord' });
export type FireRecord = z.infer<typeof FireRecord>;

export const TemporalScheduleView = z.object({
  paused: z.boolean(),
  note: z.string().nullable(),
  num_actions: z.number().int(),
  num_skipped_overlap: z.number().int(),
  num_missed_catchup_window: z.number().int(),
  next_action_times: z.array(Timestamp),
  recent_actions: z.array(z.object({ scheduled_at: Timestamp, taken_at: Timestamp, workflow_id: z.string() })),
});

export const ScheduleView = z
  .object({
    trigger_index: z.number().int(),
    schedule_id: z.string(),
    cron: z.string(),
    timezone: z.string(),
    misfire_policy: MisfirePolicy,
    max_catchup: z.number().int(),
    misfire_grace: z.string(),
    /** The activity is enabled (a disabled activity's schedules are paused). */
    active: z.boolean(),
    /** Paused by an operator; fire times missed meanwhile get the misfire policy on resume. */
    paused: z.boolean(),
    pause_note: z.string().nullable(),
    paused_at: Timestamp.nullable(),
    /** Every nominal fire time up to this instant has a decision. */
    processed_through: Timestamp,
    next_fire_times: z.array(FireTimeView),
    /** The Temporal Schedule as Temporal describes it; null when it is missing or Temporal is unreachable. */
    temporal: TemporalScheduleView.nullable(),
    temporal_ui_url: z.string(),
  })
  .meta({ id: 'Schedule' });
export type ScheduleView = z.infer<typeof ScheduleView>;

export const ActivitySchedules = z
  .object({ activity_id: z.uuid(), schedules: z.array(ScheduleView) })
  .meta({ id: 'ActivitySchedules' });
export type ActivitySchedules = z.infer<typeof ActivitySchedules>;

export const PauseScheduleRequest = z
  .object({ note: z.string().min(1).max(500).optional() })
  .strict()
  .meta({ id: 'PauseScheduleRequest' });
export type PauseScheduleRequest = z.infer<typeof PauseScheduleRequest>;

/** Where a resume applied the misfire policy: the decisions it took. */
export const ResumeResponse = ActivitySchedules.extend({
  /** Decisions recorded for fire times missed while paused (the worker starts the runs). */
  processing: z.array(z.object({ trigger_index: z.number().int(), tick_workflow_id: z.string() })),
}).meta({ id: 'ResumeResponse' });

export const BackfillRequest = z
  .object({
    /** Inclusive start of the range of nominal times. */
    start: Rfc3339DateTime,
    /** Inclusive end of the range; must not be in the future. */
    end: Rfc3339DateTime.meta({
      description:
        'Inclusive end of the range of nominal times: not before `start` and not in the future; the range holds at most 1000 fire times across the triggers. ' +
        'The server checks these (a 400 naming `end`); a schema cannot state them.',
    }),
    /** Only this cron trigger; all cron triggers of the activity when omitted. */
    trigger_index: z.number().int().min(0).optional(),
    /**
     * Also re-run the fire times in the range whose run failed, as re-runs of
     * that run (`rerun-{run_id}:{n}`), not as new cron runs; a fire time
     * whose run already has a running or succeeded re-run is left alone.
     */
    rerun_failed: z.boolean().optional(),
    /** The Temporal priority (1–5) of the runs (and re-runs) it starts; default one lower than the definition's. */
    priority: PriorityOverride.optional(),
  })
  .strict()
  .meta({ id: 'BackfillRequest' });
export type BackfillRequest = z.infer<typeof BackfillRequest>;

export const BackfillFire = z.object({
  trigger_index: z.number().int(),
  scheduled_for: z.string(),
  workflow_id: z.string(),
  run_id: z.uuid(),
  /** `duplicate`: a run for this nominal time already existed and was not run again. */
  status: z.enum(['started', 'duplicate']),
});

/** What a backfill with `rerun_failed` did with a fire time whose run had failed. */
export const BackfillRerun = z.object({
  trigger_index: z.number().int(),
  scheduled_for: z.string(),
  /** The failed cron (or backfill) run of that fire time. */
  rerun_of: z.uuid(),
  run_id: z.uuid().nullable(),
  workflow_id: z.string().nullable(),
  /** `skipped`: a re-run of it is already running or succeeded (or it can no longer be re-run: `detail`). */
  status: z.enum(['started', 'duplicate', 'skipped']),
  detail: z.string().nullable(),
});
export type BackfillRerun = z.infer<typeof BackfillRerun>;

export const BackfillResponse = z
  .object({
    activity_id: z.uuid(),
    start: z.string(),
    end: z.string(),
    fires: z.array(BackfillFire),
    started: z.number().int(),
    duplicate: z.number().int(),
    /** Only with `rerun_failed`: what became of each fire time whose run had failed. */
    reruns: z.array(BackfillRerun).optional(),
  })
  .meta({ id: 'BackfillResponse' });
export type BackfillResponse = z.infer<typeof BackfillResponse>;

export const TriggerNowResponse = z
  .object({
    activity_id: z.uuid(),
    workflow_id: z.string(),
    run_id: z.uuid(),
    /** The Idempotency-Key the run is keyed on (generated when the request had none). */
    key: z.string(),
    key_generated: z.boolean(),
    status: z.enum(['started', 'duplicate']),
  })
  .meta({ id: 'TriggerNowResponse' });
export type TriggerNowResponse = z.infer<typeof TriggerNowResponse>;

export const FireExplanation = z
  .object({
    activity_id: z.uuid(),
    scheduled_for: z.string(),
    /** One sentence an operator can act on. */
    explanation: z.string(),
    fires: z.array(FireRecord),
  })
  .meta({ id: 'FireExplanation' });
export type FireExplanation = z.infer<typeof FireExplanation>;

/**
 * How `POST /v1/schedules/reconcile` learns which schedules already match
 * (ADR 0042, ADR 0072). `listing` (the default): Temporal's schedule
 * listing, 1,000 schedules per call — a schedule it shows as desired is left
 * alone, the others are described and fixed; what Temporal's visibility has
 * not caught up with (a change made in Temporal directly a moment before) is
 * corrected by the next reconcile or sweep. `describe`: every schedule is
 * described, exact as of the call, 16 at a time (a few hundred schedules fit
 * the deadline).
 */
export const ReconcileQuery = z.object({ compare: z.enum(['listing', 'describe']).default('listing') });
export type ReconcileQuery = z.output<typeof ReconcileQuery>;

export const ReconcileResponse = z
  .object({
    created: z.array(z.string()),
    updated: z.array(z.string()),
    deleted: z.array(z.string()),
    unchanged: z.number().int(),
  })
  .meta({ id: 'ReconcileResponse' });
export type ReconcileResponse = z.infer<typeof ReconcileResponse>;
