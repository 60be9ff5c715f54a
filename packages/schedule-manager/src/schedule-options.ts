/**
 * The Temporal Schedule a cron trigger should have (ADR 0010): its id, spec,
 * policies, tick action and note, and a revision that says whether an
 * existing schedule already matches. Pure apart from hashing.
 */
import { createHash } from 'node:crypto';
import {
  canonicalJson,
  parseDurationMs,
  scheduleTickWorkflowId,
  temporalScheduleId,
  type CronTrigger,
} from '@activity-core/contracts';
import type { DefinitionRow, ScheduleStateRow } from '@activity-core/db';
import { toTemporalCronString } from '@activity-core/scheduling';
import { SCHEDULE_TICK_WORKFLOW, type ScheduleTickInput } from '@activity-core/temporal/client';
import { ScheduleOverlapPolicy, type ScheduleOptions } from '@temporalio/client';

/** Marks schedules this service owns (with the task queue, so deployments sharing a namespace never touch each other's). */
export const MANAGED_BY = 'activity-core';

/**
 * Temporal never starts a Schedule's action later than this after its time
 * when the server itself was down. Ours is short on purpose: whatever Temporal
 * does not deliver, the next tick finds missed and the misfire policy decides.
 * Temporal's floor is 10 s.
 */
export function catchupWindowMs(trigger: CronTrigger): number {
  return Math.max(
    10_000,
    parseDurationMs(trigger.misfire_grace) + (trigger.jitter === undefined ? 0 : parseDurationMs(trigger.jitter)),
  );
}

/** Who keeps a schedule paused, for the note operators read in the Temporal UI. */
type PauseCause = { kind: 'running' } | { kind: 'disabled' } | { kind: 'operator'; note: string | null };

/** Why a trigger's schedule should be paused, if it should: a disabled activity first, then an operator's pause. */
export function pauseCauseOf(
  row: Pick<DefinitionRow, 'enabled'>,
  state: Pick<ScheduleStateRow, 'paused' | 'pauseNote'> | undefined,
): PauseCause {
  if (!row.enabled) return { kind: 'disabled' };
  if (state?.paused === true) return { kind: 'operator', note: state.pauseNote };
  return { kind: 'running' };
}

function describeTrigger(row: Pick<DefinitionRow, 'id' | 'name'>, trigger: CronTrigger, triggerIndex: number): string {
  const policy = trigger.misfire_policy === 'catchup' ? `catchup (max ${trigger.max_catchup})` : trigger.misfire_policy;
  return `activity-core: ${row.name} · trigger ${triggerIndex} "${trigger.cron}" ${trigger.timezone} · misfire ${policy}, grace ${trigger.misfire_grace} · runs activity-${row.id}:{scheduled_for}`;
}

export function scheduleNote(
  row: Pick<DefinitionRow, 'id' | 'name'>,
  trigger: CronTrigger,
  triggerIndex: number,
  cause: PauseCause,
): string {
  switch (cause.kind) {
    case 'running':
      return describeTrigger(row, trigger, triggerIndex);
    case 'disabled':
      return `paused: activity ${row.name} is disabled (enable it to resume; fire times while disabled are not caught up) · ${describeTrigger(row, trigger, triggerIndex)}`;
    case 'operator':
      return `paused by operator${cause.note === null ? '' : `: ${cause.note}`} (resume applies the misfire policy to what was missed) · ${describeTrigger(row, trigger, triggerIndex)}`;
  }
}

export interface DesiredSchedule {
  scheduleId: string;
  options: ScheduleOptions;
  revision: string;
  paused: boolean;
  note: string;
  tickInput: ScheduleTickInput;
}

export function desiredSchedule(input: {
  row: Pick<DefinitionRow, 'id' | 'name' | 'version'>;
  trigger: CronTrigger;
  triggerIndex: number;
  taskQueue: string;
  cause: PauseCause;
}): DesiredSchedule {
  const { row, trigger, triggerIndex, taskQueue, cause } = input;
  const scheduleId = temporalScheduleId(row.id, triggerIndex);
  const spec = {
    cronExpressions: [toTemporalCronString(trigger.cron)],
    timezone: trigger.timezone,
    ...(trigger.jitter === undefined ? {} : { jitter: parseDurationMs(trigger.jitter) }),
  };
  const policies = {
    // While workers are down one tick waits and one is buffered; the rest are
    // dropped (the waiting tick decides for all of them), so ticks never pile up.
    overlap: ScheduleOverlapPolicy.BUFFER_ONE,
    catchupWindow: catchupWindowMs(trigger),
    pauseOnFailure: false,
  };
  const workflowId = scheduleTickWorkflowId(row.id, triggerIndex);
  const staticSummary = `${row.name} · cron trigger ${triggerIndex} tick`;
  const revision = createHash('sha256')
    .update(
      canonicalJson({ spec, policies, taskQueue, workflowId, workflowType: SCHEDULE_TICK_WORKFLOW, staticSummary }),
    )
    .digest('hex')
    .slice(0, 16);
  const tickInput: ScheduleTickInput = { activityId: row.id, triggerIndex, definitionVersion: row.version, revision };
  const paused = cause.kind !== 'running';
  // The note names the revision, so Temporal's schedule listing (which shows notes, not actions)
  // tells whether a schedule is as desired without describing it (ADR 0042).
  const note = `${scheduleNote(row, trigger, triggerIndex, cause)} · rev ${revision}`;
  return {
    scheduleId,
    revision,
    paused,
    note,
    tickInput,
    options: {
      scheduleId,
      spec,
      policies,
      action: {
        type: 'startWorkflow',
        workflowType: SCHEDULE_TICK_WORKFLOW,
        workflowId,
        taskQueue,
        args: [tickInput],
        staticSummary,
        staticDetails: `Decides the fire times of activity ${row.id} trigger ${triggerIndex} and starts activity-${row.id}:{scheduled_for} (see docs/schedules.md).`,
      },
      memo: { managedBy: MANAGED_BY, taskQueue, activityId: row.id, triggerIndex },
      state: { paused, note },
    },
  };
}

/** The `(trigger, index)` pairs of an activity's cron triggers. */
export function cronTriggersOf(
  definition: DefinitionRow['definition'],
): Array<{ trigger: CronTrigger; triggerIndex: number }> {
  return definition.triggers.flatMap((trigger, triggerIndex) =>
    trigger.type === 'cron' ? [{ trigger, triggerIndex }] : [],
  );
}
