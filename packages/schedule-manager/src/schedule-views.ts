/**
 * What the API shows about schedules, as pure functions over rows: the
 * schedule of a cron trigger, the fire log, and the sentence that answers
 * "why did / didn't this nominal time run". No I/O and no clock reads; the
 * read side (`schedule-queries.ts`) fetches the rows and passes `now`.
 *
 * Formats: a fire time (`scheduled_for`, `range_end`, `utc` of a fire-time
 * view) is always the canonical `formatScheduledFor` string; other instants
 * (window bounds, `processed_through`, `decided_at`, Temporal's own times)
 * are RFC 3339 in UTC as `Date.toISOString()` writes them.
 */
import {
  formatScheduledFor,
  temporalScheduleId,
  type ActivityDefinition,
  type CronScheduleSummary,
  type CronTrigger,
  type FireRecord,
  type FireTimeView,
  type ScheduleView,
} from '@activity-core/contracts';
import type { DefinitionRow, ScheduleFireRow, ScheduleFireWithRun, ScheduleStateRow } from '@activity-core/db';
import { fireTimesBetween, formatLocalTime, nextFireTimes, previousFireTime } from '@activity-core/scheduling';
import type { ScheduleDescription } from '@temporalio/client';
import { cronTriggersOf } from './schedule-options';

/** How many upcoming fire times a schedule view (and an activity response) lists per cron trigger. */
const NEXT_FIRE_TIMES = 5;

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

/** One fire time in UTC (the canonical `scheduled_for` string) and on the trigger's wall clock. */
export function fireTimeView(scheduledFor: Date, timezone: string): FireTimeView {
  return { utc: formatScheduledFor(scheduledFor), local: formatLocalTime(scheduledFor, timezone) };
}

/** The next fire times of a trigger, or none when it will not fire (disabled activity, paused schedule). */
function upcoming(trigger: CronTrigger, now: Date, fires: boolean): FireTimeView[] {
  return fires ? nextFireTimes(trigger, now, NEXT_FIRE_TIMES).map((time) => fireTimeView(time, trigger.timezone)) : [];
}

/** The `schedules` field of an activity response: per cron trigger, the next fire times (none while disabled). */
export function cronScheduleSummaries(
  row: { id: string; enabled: boolean; definition: Pick<ActivityDefinition, 'triggers'> },
  now: Date,
): CronScheduleSummary[] {
  return cronTriggersOf(row.definition as ActivityDefinition).map(({ trigger, triggerIndex }) => ({
    trigger_index: triggerIndex,
    schedule_id: temporalScheduleId(row.id, triggerIndex),
    cron: trigger.cron,
    timezone: trigger.timezone,
    misfire_policy: trigger.misfire_policy,
    next_fire_times: upcoming(trigger, now, row.enabled),
  }));
}

/** Where the Temporal UI shows a schedule. */
export function scheduleUiUrl(temporalUiUrl: string, namespace: string, scheduleId: string): string {
  return `${temporalUiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/schedules/${encodeURIComponent(scheduleId)}`;
}

/** A Temporal Schedule as Temporal describes it. */
export function temporalView(description: ScheduleDescription): NonNullable<ScheduleView['temporal']> {
  return {
    paused: description.state.paused,
    note: description.state.note ?? null,
    num_actions: description.info.numActionsTaken,
    num_skipped_overlap: description.info.numActionsSkippedOverlap,
    num_missed_catchup_window: description.info.numActionsMissedCatchupWindow,
    next_action_times: description.info.nextActionTimes.map((time) => time.toISOString()),
    recent_actions: description.info.recentActions.map((action) => ({
      scheduled_at: action.scheduledAt.toISOString(),
      taken_at: action.takenAt.toISOString(),
      workflow_id: action.action.workflow.workflowId,
    })),
  };
}

interface ScheduleViewInput {
  activity: Pick<DefinitionRow, 'id' | 'enabled'>;
  trigger: CronTrigger;
  triggerIndex: number;
  /** The trigger's state; absent when it was never written (a failed sync). */
  state: ScheduleStateRow | undefined;
  /** Temporal's description, or null when the schedule is missing or Temporal did not answer. */
  temporal: ScheduleView['temporal'];
  now: Date;
  temporalUiUrl: string;
  namespace: string;
}

/** One cron trigger's schedule: Postgres' state, the next fire times, and Temporal's view. */
export function scheduleView(input: ScheduleViewInput): ScheduleView {
  const { activity, trigger, triggerIndex, state, now } = input;
  const scheduleId = temporalScheduleId(activity.id, triggerIndex);
  const paused = state?.paused === true;
  return {
    trigger_index: triggerIndex,
    schedule_id: scheduleId,
    cron: trigger.cron,
    timezone: trigger.timezone,
    misfire_policy: trigger.misfire_policy,
    max_catchup: trigger.max_catchup,
    misfire_grace: trigger.misfire_grace,
    active: activity.enabled,
    paused,
    pause_note: state?.pauseNote ?? null,
    paused_at: iso(state?.pausedAt ?? null),
    processed_through: (state?.processedThrough ?? now).toISOString(),
    next_fire_times: upcoming(trigger, now, activity.enabled && !paused),
    temporal: input.temporal,
    temporal_ui_url: scheduleUiUrl(input.temporalUiUrl, input.namespace, scheduleId),
  };
}

/** A `schedule_fires` row as the fire log shows it. */
export function toFireRecord(row: ScheduleFireRow | ScheduleFireWithRun): FireRecord {
  const run =
    'runStatus' in row
      ? {
          run_status: row.runStatus as FireRecord['run_status'],
          run_error: (row.runError ?? null) as FireRecord['run_error'],
        }
      : {};
  return {
    trigger_index: row.triggerIndex,
    scheduled_for: formatScheduledFor(row.scheduledFor),
    range_end: row.rangeEnd === null ? null : formatScheduledFor(row.rangeEnd),
    status: row.status as FireRecord['status'],
    reason: row.reason as FireRecord['reason'],
    trigger_type: row.triggerType as FireRecord['trigger_type'],
    workflow_id: row.workflowId,
    run_id: row.runId,
    window_start: iso(row.windowStart),
    window_end: iso(row.windowEnd),
    covered_by: row.coveredBy,
    late_by_ms: row.lateByMs,
    detail: row.detail,
    decided_at: row.decidedAt.toISOString(),
    ...run,
  };
}

/** What a started run's record adds to its fire's explanation: that the overlap policy skipped or cancelled it. */
function runAfterStart(row: ScheduleFireRow | ScheduleFireWithRun): string {
  if (!('runStatus' in row)) return '';
  const error = row.runError as { type?: unknown; message?: unknown } | null;
  if (row.runStatus === 'skipped' && error?.type === 'overlap')
    return `, but the run was skipped by the trigger's overlap policy: ${String(error.message)}`;
  if (row.runStatus === 'cancelled' && row.runCancelledByRun !== null)
    return `, but the run was cancelled: the trigger's overlap policy is cancel_other and ${row.runCancelledByRun} replaced it`;
  if (row.runStatus === 'waiting_for_slot')
    return ', and the run waits for a slot (overlap policy or concurrency limit)';
  return '';
}

/** One recorded decision, as a sentence. */
export function explainFire(row: ScheduleFireRow | ScheduleFireWithRun): string {
  const at = formatScheduledFor(row.scheduledFor);
  switch (row.status) {
    case 'started':
    case 'duplicate': {
      const why =
        row.reason === 'on_time'
          ? 'on time'
          : row.reason === 'misfire_catchup'
            ? 'late, caught up (misfire policy catchup)'
            : row.reason === 'misfire_compress'
              ? 'late, as the one run covering every missed interval (misfire policy compress)'
              : 'by a backfill';
      return `${at} ran ${why}: ${row.workflowId}${row.status === 'duplicate' ? ' (the run already existed; it was not started twice)' : ''}${runAfterStart(row)}`;
    }
    case 'pending':
      return `${at} was decided to run (${row.reason}); the start of ${row.workflowId} is not confirmed yet and is retried by the next tick`;
    default:
      switch (row.reason) {
        case 'misfire_skip':
          return `${at} has no run: ${row.detail ?? 'it was missed and the misfire policy is skip'}`;
        case 'catchup_limit':
          return `${at} has no run: ${row.detail ?? 'more fire times were missed than max_catchup; only the most recent ran'}`;
        case 'compressed':
          return `${at} has no run of its own: it was compressed into ${row.coveredBy ?? 'the run for the latest missed time'}, whose window covers it`;
        case 'activity_disabled':
          return `${at} has no run: the activity was disabled at that time`;
        case 'trigger_changed':
          return `${at} has no run: ${row.detail ?? 'the cron trigger changed before it was processed'}`;
        default:
          return `${at} has no run (${row.reason})`;
      }
  }
}

/** Every recorded decision for one instant (one per trigger, or a range row covering it), as one answer. */
export function explainFires(rows: ReadonlyArray<ScheduleFireRow | ScheduleFireWithRun>): string {
  return rows.map(explainFire).join('; ');
}

interface UnrecordedFireInput {
  activity: Pick<DefinitionRow, 'enabled' | 'definition'>;
  /** The activity's trigger states. */
  states: readonly ScheduleStateRow[];
  scheduledFor: Date;
  now: Date;
}

/**
 * Why a nominal time has no recorded decision: not a fire time of any cron
 * trigger, in the future, before the schedule existed, passed while paused or
 * disabled, or due but not processed yet.
 */
export function explainUnrecordedFire(input: UnrecordedFireInput): string {
  const { activity, scheduledFor, now } = input;
  const at = formatScheduledFor(scheduledFor);
  const triggers = cronTriggersOf(activity.definition);
  if (triggers.length === 0) return `${at}: the activity has no cron triggers`;
  const states = new Map(input.states.map((state) => [state.triggerIndex, state]));
  for (const { trigger, triggerIndex } of triggers) {
    const isFireTime =
      fireTimesBetween(trigger, new Date(scheduledFor.getTime() - 1), scheduledFor, 1).times.length === 1;
    if (!isFireTime) continue;
    const state = states.get(triggerIndex);
    if (scheduledFor.getTime() > now.getTime()) return `${at} is in the future: trigger ${triggerIndex} fires then`;
    if (state === undefined || scheduledFor.getTime() < state.createdAt.getTime()) {
      return `${at} is before trigger ${triggerIndex}'s schedule existed; use a backfill to run it`;
    }
    if (scheduledFor.getTime() > state.processedThrough.getTime()) {
      if (state.paused)
        return `${at} passed while the schedule is paused by an operator; resume applies the misfire policy to it`;
      if (!activity.enabled) return `${at} passed while the activity is disabled; it will not run`;
      return `${at} is due but not decided yet: no worker has processed its tick (are workers running?)`;
    }
    return `${at} was processed but has no recorded decision (it predates the current trigger definition)`;
  }
  const previous = triggers
    .map(({ trigger }) => previousFireTime(trigger, scheduledFor))
    .filter((time): time is Date => time !== null);
  const latest = previous.sort((a, b) => b.getTime() - a.getTime())[0];
  return `${at} is not a fire time of any cron trigger of this activity${latest === undefined ? '' : ` (the one before it is ${formatScheduledFor(latest)})`}`;
}
