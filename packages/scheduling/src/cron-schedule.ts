/**
 * Nominal fire times of a cron trigger.
 *
 * Terminology
 * - nominal fire time: an instant the cron expression matches in the trigger's
 *   timezone. It is what `scheduled_for` records and what run ids are built
 *   from; jitter and late starts never change it.
 * - window: the context a run covers, `[previous nominal time, scheduled_for)`.
 * - missed: a nominal time that passed without its run starting on time.
 *
 * Semantics follow Temporal Schedules, because a Temporal Schedule is what
 * actually fires these triggers and every time computed here must be one it
 * fires (or would have fired):
 * - 5 fields are `minute hour day-of-month month day-of-week` (second 0);
 *   6 fields add a leading second.
 * - day-of-month and day-of-week must both match (AND). Vixie cron ORs them
 *   when both are restricted; Temporal does not, so neither do we.
 * - DST is literal wall-clock matching: a local time that does not exist
 *   (spring forward) never fires, and a local time that occurs twice (fall
 *   back) fires twice, once per UTC instant. This is also what keeps windows
 *   tiling the timeline with no gaps.
 *
 * Everything here is pure and deterministic (no clock reads, no I/O), so it is
 * safe to call from workflow code.
 */
import type { CronTrigger } from '@activity-core/contracts';
import { Cron, type CronOptions } from 'croner';

/** The part of a cron trigger that decides when it fires. */
export type CronSpec = Pick<CronTrigger, 'cron' | 'timezone'>;

/** A cron expression or timezone that cannot be evaluated (or cannot be run by Temporal). */
export class InvalidCronError extends Error {
  readonly code = 'invalid_cron';
  override readonly name = 'InvalidCronError';
}

/** Result of {@link fireTimesBetween}. */
export interface FireTimesInRange {
  /** Nominal fire times in the range, ascending. */
  times: Date[];
  /** True when the range holds more fire times than `limit`; the rest were left out. */
  truncated: boolean;
}

/**
 * Which end of a range {@link fireTimesBetween} keeps when it holds more than
 * `limit` fire times. `earliest` suits backfills (work forward from the start);
 * `latest` suits misfire recovery, where only the most recent missed times
 * can still run.
 */
export type RangeKeep = 'earliest' | 'latest';

const CRONER_OPTIONS = {
  paused: true,
  // Exactly 5 or 6 fields; a 5-field expression fires at second 0.
  mode: '5-or-6-parts',
  // Temporal matches day-of-month AND day-of-week.
  domAndDow: true,
} as const satisfies CronOptions;

/**
 * croner treats a job whose second, minute and hour are each one plain value
 * (`30 2 * * *`) as "fixed-time": in a DST gap it fires at the first instant
 * after the gap, and on a repeated hour it fires once. Temporal does neither.
 * croner documents that a step in any of those fields makes the job an
 * "interval" job, which matches literally like Temporal, so the seconds field
 * is rewritten into an equivalent stepped form (`0` becomes `0-0/1`).
 */
function literalSecondsField(field: string): string {
  if (field.includes('*') || field.includes('/')) return field;
  return field
    .split(',')
    .map((part) => (/^\d+$/.test(part) ? `${part}-${part}/1` : /^\d+-\d+$/.test(part) ? `${part}/1` : part))
    .join(',');
}

/**
 * Longest cron expression read, as in the definition contract. Checked before
 * any parsing, so no length of text reaches the cron parser.
 */
const MAX_CRON_LENGTH = 200;

function splitFields(expression: string): string[] {
  if (expression.length > MAX_CRON_LENGTH) {
    throw new InvalidCronError(
      `cron expression is ${expression.length} characters long; the limit is ${MAX_CRON_LENGTH}`,
    );
  }
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidCronError(`cron must have 5 or 6 fields, got ${fields.length}: "${expression}"`);
  }
  return fields;
}

const knownTimeZones = new Set<string>();

function assertValidTimeZone(timezone: string): void {
  if (knownTimeZones.has(timezone)) return;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new InvalidCronError(`unknown IANA timezone: ${timezone}`);
  }
  knownTimeZones.add(timezone);
}

/** Parses a trigger into a croner job that only computes times (it never runs anything). */
function compile(spec: CronSpec): Cron {
  // croner would only notice a bad zone on first use, with a less helpful message.
  assertValidTimeZone(spec.timezone);
  const fields = splitFields(spec.cron);
  const sixFields = fields.length === 6 ? fields : ['0', ...fields];
  const literal = [literalSecondsField(sixFields[0] ?? '0'), ...sixFields.slice(1)].join(' ');
  try {
    return new Cron(literal, { ...CRONER_OPTIONS, timezone: spec.timezone });
  } catch (rewrittenError) {
    // Report the error against the expression the user wrote, not the rewrite.
    try {
      new Cron(spec.cron, { ...CRONER_OPTIONS, timezone: spec.timezone });
    } catch (error) {
      throw new InvalidCronError(`invalid cron expression "${spec.cron}": ${(error as Error).message}`);
    }
    throw new InvalidCronError(`invalid cron expression "${spec.cron}": ${(rewrittenError as Error).message}`);
  }
}

function assertValidDate(value: Date, name: string): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new RangeError(`${name} is not a valid Date`);
}

function assertCount(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0)
    throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
}

/**
 * Checks that a trigger's expression and timezone can be evaluated here.
 * Throws {@link InvalidCronError} with a readable message otherwise.
 */
export function assertValidCronSpec(spec: CronSpec): void {
  compile(spec);
}

/**
 * The next `count` nominal fire times strictly after `after`, ascending.
 *
 * Fewer than `count` come back only when the expression stops matching (e.g. a
 * February 30th that never exists). Whole seconds, UTC instants.
 *
 * @example nextFireTimes({ cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris' }, new Date(), 5)
 */
export function nextFireTimes(spec: CronSpec, after: Date, count: number): Date[] {
  assertValidDate(after, 'after');
  assertCount(count, 'count');
  const cron = compile(spec);
  const times: Date[] = [];
  let cursor: Date | null = after;
  while (times.length < count && cursor !== null) {
    cursor = cron.nextRun(cursor);
    if (cursor !== null) times.push(cursor);
  }
  return times;
}

/**
 * The latest nominal fire time strictly before `before`, or `null` if the
 * expression never matched before it.
 *
 * A run's window is `[previousFireTime(trigger, scheduledFor), scheduledFor)`.
 * Across DST this is the previous instant the schedule actually fired: after a
 * skipped spring-forward day it reaches back to the day before, and the second
 * occurrence of a repeated time has the first occurrence as its predecessor.
 */
export function previousFireTime(spec: CronSpec, before: Date): Date | null {
  assertValidDate(before, 'before');
  const [previous] = compile(spec).previousRuns(1, before);
  return previous ?? null;
}

/**
 * Nominal fire times `t` with `fromExclusive < t <= toInclusive`, ascending,
 * at most `limit` of them.
 *
 * The half-open range chains without overlap: the range after
 * `(a, b]` is `(b, c]`. When the range holds more than `limit` times,
 * `truncated` is true and `keep` decides which end is returned (see
 * {@link RangeKeep}); enumeration stops after `limit + 1` times, so a
 * per-second expression over a year costs no more than the limit.
 *
 * @param keep - `earliest` for backfills, `latest` to find the most recent missed times. @default 'earliest'
 */
export function fireTimesBetween(
  spec: CronSpec,
  fromExclusive: Date,
  toInclusive: Date,
  limit: number,
  keep: RangeKeep = 'earliest',
): FireTimesInRange {
  assertValidDate(fromExclusive, 'fromExclusive');
  assertValidDate(toInclusive, 'toInclusive');
  assertCount(limit, 'limit');
  const cron = compile(spec);
  const from = fromExclusive.getTime();
  const to = toInclusive.getTime();
  const times: Date[] = [];
  if (to <= from) return { times, truncated: false };

  if (keep === 'earliest') {
    let cursor = cron.nextRun(fromExclusive);
    while (cursor !== null && cursor.getTime() <= to) {
      if (times.length === limit) return { times, truncated: true };
      times.push(cursor);
      cursor = cron.nextRun(cursor);
    }
    return { times, truncated: false };
  }

  // Walk back from just past the inclusive end; previousRuns is strictly-before.
  let [cursor] = cron.previousRuns(1, new Date(to + 1));
  while (cursor !== undefined && cursor.getTime() > from) {
    if (times.length === limit) return { times: times.reverse(), truncated: true };
    times.push(cursor);
    [cursor] = cron.previousRuns(1, cursor);
  }
  return { times: times.reverse(), truncated: false };
}
