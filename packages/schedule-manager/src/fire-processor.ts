/**
 * Decides and starts the runs of one cron trigger (ADR 0010). Every decision
 * is taken under the trigger's `schedule_states` row lock and recorded in
 * `schedule_fires` before any run starts; runs are then started from the
 * recorded `pending` rows with REJECT_DUPLICATE. A crash between the two
 * leaves pending rows that the next call (a retry, the next tick, the
 * worker's start-up sweep) starts: decided means it will run, exactly once.
 */
import {
  canonicalJson,
  cronRunWorkflowId,
  formatScheduledFor,
  runIdFor,
  temporalScheduleId,
  type ActivitySnapshot,
  type CronTrigger,
  type Logger,
} from '@activity-core/contracts';
import type {
  DefinitionRow,
  NewScheduleFire,
  SchedulesRepository,
  ScheduleStatePatch,
  ScheduleStateRow,
} from '@activity-core/db';
import type { ProcessScheduleTickResult, RunStarter } from '@activity-core/temporal/client';
import { fireRange, planFires, type PlannedFire } from './fire-plan';

interface FireProcessorDeps {
  schedules: SchedulesRepository;
  starter: RunStarter;
  logger: Logger;
  /** Overrides the database clock (tests). When omitted, decisions use Postgres' clock. */
  clock?: () => Date;
}

interface ProcessDueInput {
  activityId: string;
  triggerIndex: number;
  /** The `scheduledFor` Temporal fired the tick for; absent for a resume or a sweep. */
  tickScheduledFor?: Date;
  /** For logs: which tick (or sweep) asked. */
  origin: string;
}

const later = (a: Date, b: Date): Date => (a.getTime() >= b.getTime() ? a : b);
const normalisedCron = (cron: string): string => cron.trim().split(/\s+/).join(' ');

/** Whether two versions of a trigger fire at the same instants (policy, grace and jitter do not matter here). */
export function sameFireTimes(
  a: Pick<CronTrigger, 'cron' | 'timezone'>,
  b: Pick<CronTrigger, 'cron' | 'timezone'>,
): boolean {
  return normalisedCron(a.cron) === normalisedCron(b.cron) && a.timezone === b.timezone;
}

export function snapshotOf(row: DefinitionRow): ActivitySnapshot {
  return { id: row.id, name: row.name, version: row.version, definition: row.definition };
}

function rangeFire(
  state: Pick<ScheduleStateRow, 'activityId' | 'triggerIndex'>,
  range: { first: Date; last: Date },
  reason: 'activity_disabled' | 'trigger_changed',
  detail: string,
  now: Date,
): NewScheduleFire {
  return {
    activityId: state.activityId,
    triggerIndex: state.triggerIndex,
    scheduledFor: range.first,
    rangeEnd: range.last.getTime() > range.first.getTime() ? range.last : null,
    status: 'skipped',
    reason,
    detail,
    lateByMs: now.getTime() - range.last.getTime(),
  };
}

/**
 * What a definition change means for a locked trigger state: a changed cron
 * or timezone, or re-enabling the activity, moves `processed_through` to now
 * (those fire times are recorded as one range with the reason, and are not
 * caught up), and forgets the last window (the next window starts at the
 * previous nominal time).
 */
export function applyDefinitionToState(
  state: ScheduleStateRow,
  enabled: boolean,
  trigger: CronTrigger,
  now: Date,
): { patch: ScheduleStatePatch; fires: NewScheduleFire[]; next: ScheduleStateRow } {
  const patch: ScheduleStatePatch = {};
  const fires: NewScheduleFire[] = [];
  let processedThrough = state.processedThrough;
  let lastWindowEnd = state.lastWindowEnd;

  if (!sameFireTimes(state.trigger, trigger)) {
    const range = state.active ? fireRange(state.trigger, processedThrough, now) : undefined;
    if (range !== undefined) {
      const detail = `the trigger changed from "${state.trigger.cron}" (${state.trigger.timezone}) to "${trigger.cron}" (${trigger.timezone}) before these fire times were processed`;
      fires.push(rangeFire(state, range, 'trigger_changed', detail, now));
    }
    processedThrough = later(processedThrough, now);
    lastWindowEnd = null;
  }
  if (canonicalJson(state.trigger) !== canonicalJson(trigger)) patch.trigger = trigger;

  if (!state.active && enabled) {
    const range = fireRange(trigger, processedThrough, now);
    if (range !== undefined) {
      fires.push(
        rangeFire(
          state,
          range,
          'activity_disabled',
          'the activity was disabled; fire times while disabled are not caught up',
          now,
        ),
      );
    }
    processedThrough = later(processedThrough, now);
    lastWindowEnd = null;
    patch.active = true;
  } else if (state.active && !enabled) {
    patch.active = false;
  }
  if (processedThrough.getTime() !== state.processedThrough.getTime()) patch.processedThrough = processedThrough;
  if ((lastWindowEnd?.getTime() ?? null) !== (state.lastWindowEnd?.getTime() ?? null))
    patch.lastWindowEnd = lastWindowEnd;
  return { patch, fires, next: { ...state, ...patch } };
}

function skipDetail(fire: Extract<PlannedFire, { kind: 'skip' }>, trigger: CronTrigger): string {
  const late = `${Math.round(fire.lateByMs / 100) / 10}s after its nominal time (grace ${trigger.misfire_grace}${trigger.jitter === undefined ? '' : ` + jitter ${trigger.jitter}`})`;
  switch (fire.reason) {
    case 'misfire_skip':
      return `missed: could start only ${late}; misfire policy skip`;
    case 'catchup_limit':
      return `missed: could start only ${late}; older than the ${trigger.max_catchup} most recent missed fire times (max_catchup)`;
    case 'compressed':
      return `missed: could start only ${late}; misfire policy compress folds it into one run`;
  }
}

export function toFireRows(
  activityId: string,
  triggerIndex: number,
  trigger: CronTrigger,
  fires: PlannedFire[],
): NewScheduleFire[] {
  return fires.map((fire): NewScheduleFire => {
    const base = { activityId, triggerIndex, scheduledFor: fire.scheduledFor, lateByMs: fire.lateByMs };
    if (fire.kind === 'run') {
      const workflowId = cronRunWorkflowId(activityId, fire.scheduledFor);
      return {
        ...base,
        status: 'pending',
        reason: fire.reason,
        triggerType: 'cron',
        workflowId,
        runId: runIdFor(workflowId),
        windowStart: fire.windowStart,
        windowEnd: fire.scheduledFor,
      };
    }
    return {
      ...base,
      rangeEnd: fire.rangeEnd ?? null,
      status: 'skipped',
      reason: fire.reason,
      coveredBy: fire.coveredBy === undefined ? null : cronRunWorkflowId(activityId, fire.coveredBy),
      detail:
        skipDetail(fire, trigger) +
        (fire.rangeEnd === undefined ? '' : ' (one record for every fire time up to range_end)'),
    };
  });
}

function countSkips(rows: NewScheduleFire[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of rows) if (row.status === 'skipped') counts[row.reason] = (counts[row.reason] ?? 0) + 1;
  return counts;
}

export function createFireProcessor(deps: FireProcessorDeps) {
  /** Starts every decided-but-unstarted run of one trigger, oldest first. */
  async function drain(row: DefinitionRow, triggerIndex: number): Promise<ProcessScheduleTickResult['runs']> {
    const runs: ProcessScheduleTickResult['runs'] = [];
    for (const fire of await deps.schedules.listPendingFires(row.id, triggerIndex)) {
      if (fire.workflowId === null || fire.windowStart === null || fire.windowEnd === null) {
        deps.logger.error(
          { activityId: row.id, triggerIndex, scheduledFor: fire.scheduledFor },
          'pending fire without a workflow id or window; left as is',
        );
        continue;
      }
      const status = await deps.starter.start({
        workflowId: fire.workflowId,
        activity: snapshotOf(row),
        trigger:
          fire.triggerType === 'backfill'
            ? {
                type: 'backfill',
                scheduled_for: formatScheduledFor(fire.scheduledFor),
                window_start: formatScheduledFor(fire.windowStart),
                window_end: formatScheduledFor(fire.windowEnd),
              }
            : {
                type: 'cron',
                scheduled_for: formatScheduledFor(fire.scheduledFor),
                window_start: formatScheduledFor(fire.windowStart),
                window_end: formatScheduledFor(fire.windowEnd),
                // The run applies this trigger's overlap policy (backfills are not subject to it).
                trigger_index: triggerIndex,
              },
        // Missed fire times started late run one priority lower than on-time ones (docs/pacing.md).
        ...(fire.reason === 'misfire_catchup' || fire.reason === 'misfire_compress' ? { catchUp: true } : {}),
      });
      await deps.schedules.completeFire(row.id, triggerIndex, fire.scheduledFor, status);
      runs.push({ workflowId: fire.workflowId, status });
      deps.logger.info(
        { activityId: row.id, workflowId: fire.workflowId, status, reason: fire.reason },
        `cron run ${status}`,
      );
    }
    return runs;
  }

  return {
    /**
     * Decides every nominal fire time of the trigger due by now (and the
     * tick's own nominal time), records the decisions, and starts the runs.
     */
    async processDue(input: ProcessDueInput): Promise<ProcessScheduleTickResult> {
      const { activityId, triggerIndex, tickScheduledFor } = input;
      const decided = await deps.schedules.transaction(async (tx) => {
        let state = await tx.lockState(activityId, triggerIndex);
        // Read under the lock, on the same connection: a definition change syncs this state under the same lock, so it is either before or after us.
        const row = await tx.getLiveDefinition(activityId);
        const trigger = row?.definition.triggers[triggerIndex];
        if (row === undefined || trigger?.type !== 'cron') return { kind: 'orphaned' as const };
        const now = deps.clock?.() ?? (await tx.databaseNow());
        if (state === undefined) {
          // A schedule whose state was never written (its creation was interrupted): start deciding from this fire.
          const from = tickScheduledFor === undefined ? now : new Date(tickScheduledFor.getTime() - 1);
          await tx.insertState({
            activityId,
            triggerIndex,
            scheduleId: temporalScheduleId(activityId, triggerIndex),
            trigger,
            processedThrough: from,
            active: row.enabled,
          });
          state = await tx.lockState(activityId, triggerIndex);
          if (state === undefined) throw new Error(`schedule state ${activityId}/${triggerIndex} could not be created`);
        }
        if (state.paused) return { kind: 'decided' as const, row, paused: true, skipped: {} };

        const transition = applyDefinitionToState(state, row.enabled, trigger, now);
        const fires = [...transition.fires];
        const patch: ScheduleStatePatch = { ...transition.patch };
        const current = transition.next;
        const upTo = later(later(now, tickScheduledFor ?? now), current.processedThrough);
        if (!row.enabled) {
          // A tick that slipped through while the activity was being disabled.
          const range = fireRange(trigger, current.processedThrough, upTo);
          if (range !== undefined) {
            fires.push(
              rangeFire(
                current,
                range,
                'activity_disabled',
                'the activity is disabled; fire times while disabled are not caught up',
                now,
              ),
            );
          }
          patch.processedThrough = upTo;
        } else {
          const plan = planFires({
            trigger,
            processedThrough: current.processedThrough,
            lastWindowEnd: current.lastWindowEnd,
            now,
            ...(tickScheduledFor === undefined ? {} : { tickScheduledFor }),
          });
          if (plan.foreignTickScheduledFor) {
            deps.logger.warn(
              {
                activityId,
                triggerIndex,
                scheduledFor: tickScheduledFor === undefined ? undefined : formatScheduledFor(tickScheduledFor),
                cron: trigger.cron,
                timezone: trigger.timezone,
              },
              'Temporal fired at a time this cron evaluation does not produce; running it anyway',
            );
          }
          fires.push(...toFireRows(activityId, triggerIndex, trigger, plan.fires));
          patch.processedThrough = plan.processedThrough;
          patch.lastWindowEnd = plan.lastWindowEnd;
        }
        await tx.insertFires(fires);
        await tx.updateState(activityId, triggerIndex, patch);
        return { kind: 'decided' as const, row, paused: false, skipped: countSkips(fires) };
      });
      if (decided.kind === 'orphaned') return { status: 'orphaned', runs: [], skipped: {} };

      // Decisions are committed: start what was decided (this call's and any left pending by an earlier one).
      const runs = await drain(decided.row, triggerIndex);
      if (Object.keys(decided.skipped).length > 0) {
        deps.logger.info(
          { activityId, triggerIndex, skipped: decided.skipped, origin: input.origin },
          'cron fire times skipped',
        );
      }
      return { status: decided.paused ? 'paused' : 'processed', runs, skipped: decided.skipped };
    },
  };
}

export type FireProcessor = ReturnType<typeof createFireProcessor>;
