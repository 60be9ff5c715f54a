/**
 * What every nominal fire time due by now gets: the pure core of a schedule
 * tick (ADR 0010). No I/O, no clock reads; the caller holds the trigger's row
 * lock and passes `processedThrough` and `now`.
 *
 * Terminology
 * - processed through: every nominal time at or before it already has a
 *   decision; a plan decides every nominal time in `(processedThrough, upTo]`
 *   and moves it to `upTo` (the later of now and the `scheduledFor` Temporal
 *   fired the tick for).
 * - late: started more than `misfire_grace` (+ `jitter`) after its nominal
 *   time — the misfire policy decides what it gets. On-time fire times always
 *   run, each with the window `[previous nominal time, scheduled_for)`.
 */
import type { CronTrigger } from '@activity-core/contracts';
import { fireTimesBetween, isLate, planMisfire, previousFireTime, type SkipReason } from '@activity-core/scheduling';

type RunReason = 'on_time' | 'misfire_catchup' | 'misfire_compress';

/** One decision for one nominal time (or, with `rangeEnd`, for a range too long to list). */
export type PlannedFire =
  | { kind: 'run'; scheduledFor: Date; reason: RunReason; windowStart: Date; lateByMs: number }
  | {
      kind: 'skip';
      scheduledFor: Date;
      /** Last nominal time this skip stands for, when it stands for many. */
      rangeEnd?: Date;
      reason: SkipReason;
      /** For `compressed`: the nominal time of the run whose window covers this one. */
      coveredBy?: Date;
      lateByMs: number;
    };

interface FirePlanInput {
  trigger: CronTrigger;
  processedThrough: Date;
  /** `scheduled_for` of the latest run this trigger started; where a compressed window starts. */
  lastWindowEnd: Date | null;
  now: Date;
  /** The `scheduledFor` Temporal fired the tick for; absent for a resume or a start-up sweep. */
  tickScheduledFor?: Date;
  /**
   * Most fire times listed one by one; older missed times are recorded as
   * one range. Must be at least `max_catchup` (at most 1000). @default 1000
   */
  listLimit?: number;
}

interface FirePlan {
  /** Ascending by `scheduledFor`. */
  fires: PlannedFire[];
  processedThrough: Date;
  lastWindowEnd: Date | null;
  /**
   * True when Temporal fired the tick for a `scheduledFor` our cron
   * evaluation does not produce. It still runs (Temporal is the clock), but it
   * means the two evaluations disagree, which the caller logs loudly.
   */
  foreignTickScheduledFor: boolean;
}

const DEFAULT_LIST_LIMIT = 1000;

function later(a: Date, b: Date): Date {
  return a.getTime() >= b.getTime() ? a : b;
}

/** Decides every nominal fire time in `(processedThrough, max(now, tickScheduledFor)]`. */
export function planFires(input: FirePlanInput): FirePlan {
  const { trigger, processedThrough, now } = input;
  const limit = Math.max(input.listLimit ?? DEFAULT_LIST_LIMIT, trigger.max_catchup);
  const upTo =
    input.tickScheduledFor === undefined
      ? later(now, processedThrough)
      : later(later(now, input.tickScheduledFor), processedThrough);

  const range = fireTimesBetween(trigger, processedThrough, upTo, limit, 'latest');
  const times = [...range.times];
  let foreignTickScheduledFor = false;
  const tickScheduledFor = input.tickScheduledFor;
  if (
    tickScheduledFor !== undefined &&
    tickScheduledFor.getTime() > processedThrough.getTime() &&
    !times.some((time) => time.getTime() === tickScheduledFor.getTime()) &&
    (!range.truncated || (times[0] !== undefined && tickScheduledFor.getTime() > times[0].getTime()))
  ) {
    foreignTickScheduledFor = true;
    times.push(tickScheduledFor);
    times.sort((a, b) => a.getTime() - b.getTime());
  }

  const lateness = (time: Date): number => now.getTime() - time.getTime();
  const isMissed = (time: Date): boolean => isLate(time, now, trigger.misfire_grace, trigger.jitter);
  // Lateness only grows with age, so the missed times are a prefix.
  const missed = times.filter(isMissed);
  const onTime = times.filter((time) => !isMissed(time));

  const fires: PlannedFire[] = [];
  let lastWindowEnd = input.lastWindowEnd;

  // Fire times older than the listed ones (a very long outage of a frequent cron): one range row.
  let omittedStart: Date | undefined;
  if (range.truncated && times[0] !== undefined) {
    omittedStart = fireTimesBetween(trigger, processedThrough, upTo, 1, 'earliest').times[0];
    const omittedEnd = previousFireTime(trigger, times[0]);
    if (omittedStart !== undefined && omittedEnd !== null) {
      fires.push({
        kind: 'skip',
        scheduledFor: omittedStart,
        ...(omittedEnd.getTime() > omittedStart.getTime() ? { rangeEnd: omittedEnd } : {}),
        reason:
          trigger.misfire_policy === 'skip'
            ? 'misfire_skip'
            : trigger.misfire_policy === 'catchup'
              ? 'catchup_limit'
              : 'compressed',
        ...(trigger.misfire_policy === 'compress' && missed.length > 0 ? { coveredBy: missed.at(-1)! } : {}),
        lateByMs: lateness(omittedEnd),
      });
    }
  }

  if (missed.length > 0) {
    // A compressed window must also cover what was too old to list.
    const windowAnchor =
      lastWindowEnd ??
      (omittedStart === undefined ? undefined : (previousFireTime(trigger, omittedStart) ?? undefined));
    const plan = planMisfire({
      policy: trigger.misfire_policy,
      missed,
      maxCatchup: trigger.max_catchup,
      ...(windowAnchor === undefined || windowAnchor.getTime() >= missed[0]!.getTime()
        ? {}
        : { lastWindowEnd: windowAnchor }),
      trigger,
    });
    const compressedInto = trigger.misfire_policy === 'compress' ? plan.runs[0]?.scheduledFor : undefined;
    for (const skipped of plan.skipped) {
      fires.push({
        kind: 'skip',
        scheduledFor: skipped.scheduledFor,
        reason: skipped.reason,
        ...(skipped.reason === 'compressed' && compressedInto !== undefined ? { coveredBy: compressedInto } : {}),
        lateByMs: lateness(skipped.scheduledFor),
      });
    }
    for (const run of plan.runs) {
      fires.push({
        kind: 'run',
        scheduledFor: run.scheduledFor,
        reason: trigger.misfire_policy === 'catchup' ? 'misfire_catchup' : 'misfire_compress',
        windowStart: run.windowStart,
        lateByMs: lateness(run.scheduledFor),
      });
    }
  }

  for (const [index, time] of onTime.entries()) {
    const previous = index > 0 ? onTime[index - 1] : missed.at(-1);
    const windowStart = previous ?? previousFireTime(trigger, time) ?? processedThrough;
    fires.push({ kind: 'run', scheduledFor: time, reason: 'on_time', windowStart, lateByMs: lateness(time) });
  }

  for (const fire of fires) {
    if (fire.kind === 'run' && (lastWindowEnd === null || fire.scheduledFor.getTime() > lastWindowEnd.getTime()))
      lastWindowEnd = fire.scheduledFor;
  }
  fires.sort((a, b) => a.scheduledFor.getTime() - b.scheduledFor.getTime());
  return { fires, processedThrough: upTo, lastWindowEnd, foreignTickScheduledFor };
}

/**
 * The nominal fire times of `trigger` in `(from, to]`, as one range: its
 * first and last time, or undefined when there are none. Used to record a
 * whole disabled period (or a trigger change) as one decision.
 */
export function fireRange(
  trigger: Pick<CronTrigger, 'cron' | 'timezone'>,
  from: Date,
  to: Date,
): { first: Date; last: Date } | undefined {
  const first = fireTimesBetween(trigger, from, to, 1, 'earliest').times[0];
  const last = fireTimesBetween(trigger, from, to, 1, 'latest').times[0];
  return first === undefined || last === undefined ? undefined : { first, last };
}
