/**
 * What a backfill request asks for, decided without I/O: whether it may run
 * at all, and if so every nominal fire time it covers, in the order the
 * command starts them, each with its run id and window and whether it is
 * already a run. The backfill command reads the inputs, calls
 * {@link planBackfill}, and carries the plan out.
 *
 * The rules
 * - The range `[start, end]` is inclusive at both ends and must lie in the
 *   past (`end` not after now).
 * - Only cron triggers are backfilled: all of them, or the one named by
 *   `trigger_index`.
 * - At most {@link MAX_BACKFILL_FIRES} nominal times per request, across all
 *   its triggers; a longer range is refused whole (split it), never cut.
 * - Only fire times the schedule has already decided (at or before the
 *   trigger's `processed_through`) may be backfilled. A later one — for
 *   instance one missed while the schedule is paused — is the schedule's to
 *   run under its misfire policy on resume; a backfill there would overlap or
 *   pre-empt the windows that policy plans. One such time refuses the request.
 * - A backfilled time is the same run as a normal fire of that time
 *   (`activity-{activity_id}:{scheduled_for}`), with the window
 *   `[previous nominal time, scheduled_for)`. A time whose run the fire log
 *   already records, or which another trigger of the same request already
 *   covers (two triggers firing at one instant share one run), is a
 *   duplicate: reported, never started again.
 * - Fires are started oldest first; at the same instant, lower trigger index
 *   first.
 */
import {
  ConflictError,
  cronRunWorkflowId,
  formatScheduledFor,
  InvalidInputError,
  runIdFor,
  type CronTrigger,
} from '@activity-core/contracts';
import type { ScheduleFireRow } from '@activity-core/db';
import { fireTimesBetween, previousFireTime } from '@activity-core/scheduling';

/** Most nominal times one backfill request may cover; split longer ranges. */
export const MAX_BACKFILL_FIRES = 1000;

export interface BackfillPlanInput {
  activity: { id: string; enabled: boolean };
  /** The activity's cron triggers with their positions in the definition. */
  triggers: ReadonlyArray<{ trigger: CronTrigger; triggerIndex: number }>;
  /** Inclusive first instant of the range. */
  start: Date;
  /** Inclusive last instant of the range. */
  end: Date;
  /** Only this trigger; every cron trigger when absent. */
  triggerIndex?: number;
  /** `processed_through` of each trigger that has a schedule state; a trigger without one has decided nothing. */
  processedThrough: ReadonlyMap<number, Date>;
  /** Decisions already recorded for the range, in any order (a run is recognised by its workflow id, whichever trigger recorded it). */
  existingFires: ReadonlyArray<Pick<ScheduleFireRow, 'scheduledFor' | 'status' | 'workflowId'>>;
  now: Date;
  /** @default MAX_BACKFILL_FIRES */
  maxFires?: number;
}

/** One nominal time of the plan. */
export interface BackfillPlanFire {
  triggerIndex: number;
  scheduledFor: Date;
  workflowId: string;
  runId: string;
  /** Start of the run's window; it ends at `scheduledFor`. */
  windowStart: Date;
  /** How long ago the nominal time was, at `now`. */
  lateByMs: number;
  /**
   * `start`: no run is recorded for this time, so start one (the start still
   * answers `duplicate` if the run exists after all). `duplicate`: the fire
   * log records its run (`recorded`), or an earlier fire of this plan is the
   * same run (`in_request`).
   */
  action: { kind: 'start' } | { kind: 'duplicate'; because: 'recorded' | 'in_request' };
}

export type BackfillPlan =
  { ok: true; fires: BackfillPlanFire[] } | { ok: false; error: ConflictError | InvalidInputError };

/** Fire-log statuses that mean the nominal time has its run. */
const HAS_RUN: ReadonlySet<string> = new Set(['started', 'duplicate']);

/** Decides what a backfill request does; see the module comment for the rules. */
export function planBackfill(input: BackfillPlanInput): BackfillPlan {
  const { activity, start, end, now } = input;
  const maxFires = input.maxFires ?? MAX_BACKFILL_FIRES;
  const refuse = (error: ConflictError | InvalidInputError): BackfillPlan => ({ ok: false, error });

  if (!activity.enabled)
    return refuse(new ConflictError(`activity ${activity.id} is disabled; enable it before backfilling it`));
  if (end.getTime() < start.getTime())
    return refuse(new InvalidInputError('end is before start', [{ path: 'end', message: 'must not be before start' }]));
  if (end.getTime() > now.getTime()) {
    return refuse(
      new InvalidInputError('a backfill covers past fire times only', [
        { path: 'end', message: `must not be in the future (now is ${now.toISOString()})` },
      ]),
    );
  }
  let triggers = input.triggers;
  if (input.triggerIndex !== undefined) {
    triggers = triggers.filter((entry) => entry.triggerIndex === input.triggerIndex);
    if (triggers.length === 0) {
      return refuse(
        new InvalidInputError(`trigger ${input.triggerIndex} is not a cron trigger of this activity`, [
          { path: 'trigger_index', message: 'must be the index of a cron trigger' },
        ]),
      );
    }
  }
  if (triggers.length === 0)
    return refuse(new ConflictError(`activity ${activity.id} has no cron triggers to backfill`));

  const times: Array<{ triggerIndex: number; trigger: CronTrigger; scheduledFor: Date }> = [];
  for (const { trigger, triggerIndex } of triggers) {
    // fireTimesBetween is (from, to]: one millisecond earlier makes `start` itself count.
    const range = fireTimesBetween(trigger, new Date(start.getTime() - 1), end, maxFires, 'earliest');
    if (range.truncated || times.length + range.times.length > maxFires) {
      return refuse(
        new InvalidInputError(`the range holds more than ${maxFires} fire times; split it into smaller backfills`, [
          { path: 'end', message: `at most ${maxFires} fire times per backfill` },
        ]),
      );
    }
    times.push(...range.times.map((scheduledFor) => ({ triggerIndex, trigger, scheduledFor })));
  }
  times.sort((a, b) => a.scheduledFor.getTime() - b.scheduledFor.getTime() || a.triggerIndex - b.triggerIndex);

  const undecided = times.find(({ triggerIndex, scheduledFor }) => {
    const through = input.processedThrough.get(triggerIndex);
    return through === undefined || scheduledFor.getTime() > through.getTime();
  });
  if (undecided !== undefined) {
    const through = input.processedThrough.get(undecided.triggerIndex);
    return refuse(
      new InvalidInputError(
        `fire time ${formatScheduledFor(undecided.scheduledFor)} is not decided yet: it is the schedule's to run under its misfire policy (resume a paused schedule first)`,
        [
          {
            path: 'end',
            message: `fire times after ${through === undefined ? 'the schedule was created' : formatScheduledFor(through)} cannot be backfilled yet`,
          },
        ],
      ),
    );
  }

  const recordedRuns = new Set(
    input.existingFires.flatMap((fire) =>
      fire.workflowId !== null && HAS_RUN.has(fire.status) ? [fire.workflowId] : [],
    ),
  );
  const planned = new Set<string>();
  const fires = times.map(({ triggerIndex, trigger, scheduledFor }): BackfillPlanFire => {
    const workflowId = cronRunWorkflowId(activity.id, scheduledFor);
    const action: BackfillPlanFire['action'] = planned.has(workflowId)
      ? { kind: 'duplicate', because: 'in_request' }
      : recordedRuns.has(workflowId)
        ? { kind: 'duplicate', because: 'recorded' }
        : { kind: 'start' };
    planned.add(workflowId);
    return {
      triggerIndex,
      scheduledFor,
      workflowId,
      runId: runIdFor(workflowId),
      windowStart: previousFireTime(trigger, scheduledFor) ?? scheduledFor,
      lateByMs: now.getTime() - scheduledFor.getTime(),
      action,
    };
  });
  return { ok: true, fires };
}
