/**
 * Misfire handling: deciding whether a fire was missed, and what to run for
 * the fire times that were (the rules are in docs/schedules.md, "Late, missed,
 * and the three misfire policies"). Pure; safe in workflow code.
 */
import { parseDurationMs, type MisfirePolicy } from '@activity-core/contracts';
import { previousFireTime, type CronSpec } from './cron-schedule';

/** Why a nominal fire time got no run of its own. */
export type SkipReason =
  /** Policy `skip`: missed times are dropped. */
  | 'misfire_skip'
  /** Policy `catchup`: older than the `max_catchup` most recent missed times. */
  | 'catchup_limit'
  /** Policy `compress`: folded into the window of the one run for the latest missed time. */
  | 'compressed';

/** A run to start for a missed fire time; its id is `activity-{id}:{formatScheduledFor(scheduledFor)}`. */
export interface PlannedRun {
  /** The nominal fire time the run stands for. */
  scheduledFor: Date;
  /** Inclusive start of the run's context window. */
  windowStart: Date;
  /** Exclusive end of the run's context window; always equals `scheduledFor`. */
  windowEnd: Date;
}

/** A missed fire time that gets no run, to be recorded so "why not" has an answer. */
export interface SkippedFire {
  scheduledFor: Date;
  reason: SkipReason;
}

/** What to do about a set of missed fire times. Both lists are ascending by `scheduledFor`. */
export interface MisfirePlan {
  runs: PlannedRun[];
  skipped: SkippedFire[];
}

export interface MisfirePlanInput {
  /** The trigger's `misfire_policy`. */
  policy: MisfirePolicy;
  /**
   * Nominal fire times that passed without a run, strictly ascending and
   * consecutive (every nominal time between the first and the last is in the
   * list), as {@link fireTimesBetween} returns them.
   */
  missed: readonly Date[];
  /** The trigger's `max_catchup`: most runs a catch-up starts (at least 1). */
  maxCatchup: number;
  /**
   * Where the last completed window ended: the `scheduled_for` of the last run
   * that did run. It starts the window of a run for the oldest missed time, and
   * of the compressed run. Must be before the oldest missed time. When absent,
   * the nominal time before the oldest missed time is used instead. Pass it
   * whenever `missed` may be incomplete at its old end (a truncated range),
   * or the compressed window will not cover what was cut off.
   */
  lastWindowEnd?: Date;
  /** The trigger's schedule, to find the nominal time before the oldest missed time when `lastWindowEnd` is absent. */
  trigger: CronSpec;
}

function assertNever(value: never): never {
  throw new Error(`unhandled misfire policy: ${String(value)}`);
}

function validate(input: MisfirePlanInput): void {
  const { missed, maxCatchup, lastWindowEnd } = input;
  if (!Number.isInteger(maxCatchup) || maxCatchup < 1) {
    throw new RangeError(`maxCatchup must be a positive integer, got ${maxCatchup}`);
  }
  let previous = Number.NEGATIVE_INFINITY;
  for (const [index, time] of missed.entries()) {
    const ms = time.getTime();
    if (Number.isNaN(ms)) throw new RangeError(`missed[${index}] is not a valid Date`);
    if (ms <= previous)
      throw new RangeError(`missed must be strictly ascending; missed[${index}] is not after missed[${index - 1}]`);
    previous = ms;
  }
  if (lastWindowEnd !== undefined) {
    if (Number.isNaN(lastWindowEnd.getTime())) throw new RangeError('lastWindowEnd is not a valid Date');
    const oldest = missed[0];
    if (oldest !== undefined && lastWindowEnd.getTime() >= oldest.getTime()) {
      throw new RangeError(
        `lastWindowEnd (${lastWindowEnd.toISOString()}) must be before the oldest missed time (${oldest.toISOString()}); a time inside a completed window was not missed`,
      );
    }
  }
}

/** Start of the window of a run for the oldest missed time. */
function startBeforeOldest(input: MisfirePlanInput, oldest: Date): Date {
  if (input.lastWindowEnd !== undefined) return input.lastWindowEnd;
  const previous = previousFireTime(input.trigger, oldest);
  if (previous === null) {
    // Only an expression that never matched before `oldest` gets here, and then `oldest` could not have been missed.
    throw new RangeError(
      `no nominal fire time before ${oldest.toISOString()} for "${input.trigger.cron}"; pass lastWindowEnd`,
    );
  }
  return previous;
}

/**
 * Plans what to do about fire times that were missed (worker down, schedule
 * paused, server down), per the trigger's misfire policy:
 *
 * - `skip`: no runs; every missed time is skipped (`misfire_skip`). The next
 *   on-time fire runs normally, with the window `[latest missed, its time)`.
 * - `catchup`: a run for each of the `min(N, maxCatchup)` most recent missed
 *   times, ascending, each with its own window `[previous nominal, scheduledFor)`
 *   (the previous nominal of the oldest missed time is `lastWindowEnd`, else the
 *   trigger's previous fire time); older missed times are skipped
 *   (`catchup_limit`) and their intervals belong to no window.
 * - `compress`: one run for the latest missed time whose window covers every
 *   missed interval, from `lastWindowEnd` (else the nominal time before the
 *   oldest missed one) to the latest missed time; every other missed time is
 *   skipped (`compressed`).
 *
 * No missed times, no runs and no skips, whatever the policy.
 */
export function planMisfire(input: MisfirePlanInput): MisfirePlan {
  validate(input);
  const missed = [...input.missed];
  const latest = missed.at(-1);
  const oldest = missed[0];
  if (latest === undefined || oldest === undefined) return { runs: [], skipped: [] };

  switch (input.policy) {
    case 'skip':
      return { runs: [], skipped: missed.map((scheduledFor) => ({ scheduledFor, reason: 'misfire_skip' })) };

    case 'catchup': {
      const firstRun = Math.max(0, missed.length - input.maxCatchup);
      const runs = missed.slice(firstRun).map((scheduledFor, offset): PlannedRun => {
        const index = firstRun + offset;
        const windowStart = missed[index - 1] ?? startBeforeOldest(input, oldest);
        return { scheduledFor, windowStart, windowEnd: scheduledFor };
      });
      const skipped = missed
        .slice(0, firstRun)
        .map((scheduledFor): SkippedFire => ({ scheduledFor, reason: 'catchup_limit' }));
      return { runs, skipped };
    }

    case 'compress':
      return {
        runs: [{ scheduledFor: latest, windowStart: startBeforeOldest(input, oldest), windowEnd: latest }],
        skipped: missed.slice(0, -1).map((scheduledFor) => ({ scheduledFor, reason: 'compressed' })),
      };

    default:
      return assertNever(input.policy);
  }
}

/**
 * Whether a fire counts as missed: it started later than its nominal time plus
 * the grace (`misfire_grace`, e.g. `60s`) plus the trigger's `jitter`, which
 * delays fires on purpose and so never makes one late. Starting exactly at the
 * limit is on time.
 */
export function isLate(scheduledFor: Date, actualStart: Date, grace: string, jitter?: string): boolean {
  if (Number.isNaN(scheduledFor.getTime())) throw new RangeError('scheduledFor is not a valid Date');
  if (Number.isNaN(actualStart.getTime())) throw new RangeError('actualStart is not a valid Date');
  const allowedMs = parseDurationMs(grace) + (jitter === undefined ? 0 : parseDurationMs(jitter));
  return actualStart.getTime() - scheduledFor.getTime() > allowedMs;
}
