/**
 * The pure decisions that let a sweep over many schedules skip the ones with
 * nothing to do (ADR 0042): whether Temporal already has a schedule as
 * desired — from its description, or from its entry in the schedule listing —
 * and whether a trigger has anything for the fire processor to decide. A
 * trigger for which these say "nothing" is left alone; every other one goes
 * through the full, locked path, so the shortcuts can only skip work, never
 * write anything.
 */
import type { CronTrigger } from '@activity-core/contracts';
import type { DefinitionRow, ScheduleStateRow } from '@activity-core/db';
import { nextFireTimes } from '@activity-core/scheduling';
import type { ScheduleTickInput } from '@activity-core/temporal/client';
import { applyDefinitionToState } from './fire-processor';
import { MANAGED_BY, type DesiredSchedule } from './schedule-options';

/** What Temporal's description of a schedule says about the desired one. */
type DescriptionVerdict = 'as_desired' | 'newer' | 'differs';

/**
 * `newer`: the schedule was written from a later definition version than the
 * one the caller holds, and must not be overwritten. `as_desired`: same
 * revision, pause state and note (the note names the revision, the pause
 * cause and the trigger, see {@link desiredSchedule}).
 */
export function compareDescription(
  current: { action: { args?: readonly unknown[] }; state: { paused: boolean; note?: string | undefined } },
  desired: Pick<DesiredSchedule, 'revision' | 'paused' | 'note'>,
  definitionVersion: number,
): DescriptionVerdict {
  const existing = current.action.args?.[0] as Partial<ScheduleTickInput> | undefined;
  if (existing?.definitionVersion !== undefined && existing.definitionVersion > definitionVersion) return 'newer';
  const same =
    existing?.revision === desired.revision &&
    existing.definitionVersion !== undefined &&
    current.state.paused === desired.paused &&
    (current.state.note ?? '') === desired.note;
  return same ? 'as_desired' : 'differs';
}

/**
 * Whether Temporal's schedule listing shows the schedule as desired: ours
 * (memo), same pause state, and the note written with the desired revision.
 * The listing is eventually consistent: a change made in Temporal a moment
 * ago may not show yet, so this is only for the periodic sweep, which the
 * next sweep corrects.
 */
export function listedAsDesired(
  entry:
    { memo?: Record<string, unknown> | undefined; state: { paused: boolean; note?: string | undefined } } | undefined,
  desired: Pick<DesiredSchedule, 'paused' | 'note'>,
  taskQueue: string,
): boolean {
  if (entry === undefined) return false;
  return (
    entry.memo?.managedBy === MANAGED_BY &&
    entry.memo.taskQueue === taskQueue &&
    entry.state.paused === desired.paused &&
    entry.state.note === desired.note
  );
}

/**
 * Whether a trigger's schedule state needs no write to match its definition
 * (what syncing it would change: its trigger, `active`, `processed_through`).
 */
export function stateInStep(
  state: ScheduleStateRow | undefined,
  enabled: boolean,
  trigger: Parameters<typeof applyDefinitionToState>[2],
  now: Date,
): boolean {
  if (state === undefined) return false;
  const { patch, fires } = applyDefinitionToState(state, enabled, trigger, now);
  return fires.length === 0 && Object.keys(patch).length === 0;
}

/**
 * Whether the fire processor has anything to decide or start for this
 * trigger at `now`: a definition change to apply, a fire time due and not
 * decided, or a decided run whose start is not confirmed. When it has not,
 * processing it would only move `processed_through` to `now` — over no fire
 * time — so the sweep skips it. Paused, inactive and orphaned triggers are
 * skipped too (processing them decides nothing).
 */
export function needsProcessing(input: {
  state: ScheduleStateRow;
  row: DefinitionRow | undefined;
  hasPending: boolean;
  now: Date;
  /** {@link firstFireAfter}, or a remembered answer of it. */
  nextFireAfter?: (trigger: CronTrigger, from: Date) => number | null;
}): boolean {
  const { state, row, hasPending, now } = input;
  if (!state.active || state.paused) return false;
  const trigger = row?.definition.triggers[state.triggerIndex];
  if (row === undefined || trigger?.type !== 'cron') return false;
  if (hasPending) return true;
  if (!stateInStep(state, row.enabled, trigger, now)) return true;
  const next = (input.nextFireAfter ?? firstFireAfter)(trigger, state.processedThrough);
  return next !== null && next <= now.getTime();
}

/** The first nominal fire time strictly after `from` (epoch ms), or null if the cron never matches again. */
export function firstFireAfter(trigger: Pick<CronTrigger, 'cron' | 'timezone'>, from: Date): number | null {
  return nextFireTimes(trigger, from, 1)[0]?.getTime() ?? null;
}
