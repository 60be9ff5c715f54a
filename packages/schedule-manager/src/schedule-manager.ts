/**
 * The schedule manager (SPEC §5.2, ADR 0010): keeps one Temporal Schedule per
 * cron trigger in step with Postgres, processes ticks, and carries out the
 * operator actions (pause, resume, trigger now, backfill) and the "why did /
 * didn't this run" answers.
 *
 * Postgres is the source of truth: the definition says which schedules exist
 * and how they fire, `schedule_states` says whether an operator paused them
 * and how far fire times have been decided. Temporal is made to match.
 */
import { randomUUID } from 'node:crypto';
import {
  ConflictError,
  cronRunWorkflowId,
  formatScheduledFor,
  InvalidInputError,
  manualRunWorkflowId,
  NotFoundError,
  runIdFor,
  type ActivitySchedules,
  type BackfillRequest,
  type BackfillResponse,
  type CronTrigger,
  type FireExplanation,
  type FireRecord,
  type ReconcileResponse,
  type ScheduleView,
  type TriggerNowResponse,
} from '@activity-core/contracts';
import type { DefinitionRow, DefinitionsRepository, RunsRepository, ScheduleFireRow, SchedulesRepository, ScheduleStateRow } from '@activity-core/db';
import { fireTimesBetween, formatFireTime, nextFireTimes, previousFireTime } from '@activity-core/scheduling';
import { SCHEDULE_TICK_WORKFLOW, type ProcessScheduleTickInput, type ProcessScheduleTickResult, type RunStarter, type ScheduleTickInput } from '@activity-core/temporal';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client, type ScheduleDescription } from '@temporalio/client';
import { applyDefinitionToState, createFireProcessor, snapshotOf, type Logger } from './fire-processor';
import { cronTriggersOf, desiredSchedule, MANAGED_BY, scheduleIdFor, tickWorkflowIdFor, type PauseCause } from './schedule-options';
import { NEXT_FIRE_TIMES } from './trigger-checks';

export interface ScheduleManagerDeps {
  client: Client;
  namespace: string;
  taskQueue: string;
  schedules: SchedulesRepository;
  definitions: Pick<DefinitionsRepository, 'get'>;
  runs: Pick<RunsRepository, 'getRunByWorkflowId'>;
  starter: RunStarter;
  logger: Logger;
  /** For links in schedule views. @default "http://127.0.0.1:8233" */
  temporalUiUrl?: string;
  /** @default () => new Date() */
  clock?: () => Date;
}

/** What keeping one schedule in step did. */
export type SyncOutcome = 'created' | 'updated' | 'unchanged' | 'deleted';

/** Most nominal times one backfill request may cover; split longer ranges. */
export const MAX_BACKFILL_FIRES = 1000;

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

export function toFireRecord(row: ScheduleFireRow): FireRecord {
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
  };
}

function explainFire(row: ScheduleFireRow): string {
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
      return `${at} ran ${why}: ${row.workflowId}${row.status === 'duplicate' ? ' (the run already existed; it was not started twice)' : ''}`;
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

function isScheduleNotFound(error: unknown): boolean {
  return error instanceof ScheduleNotFoundError;
}

export function createScheduleManager(deps: ScheduleManagerDeps) {
  const clock = deps.clock ?? (() => new Date());
  // Fire decisions take Postgres' clock unless a test injects one (see ScheduleQueries.databaseNow).
  const processor = createFireProcessor(deps);
  const uiUrl = (deps.temporalUiUrl ?? 'http://127.0.0.1:8233').replace(/\/$/, '');
  const { logger } = deps;

  async function requireActivity(activityId: string): Promise<DefinitionRow> {
    const row = await deps.definitions.get(activityId);
    if (row === undefined) throw new NotFoundError('activity', activityId);
    return row;
  }

  function pauseCause(row: DefinitionRow, state: ScheduleStateRow | undefined): PauseCause {
    if (!row.enabled) return { kind: 'disabled' };
    if (state?.paused === true) return { kind: 'operator', note: state.pauseNote };
    return { kind: 'running' };
  }

  /** Writes (or creates) the trigger's state under its lock, applying definition changes. */
  async function syncState(callerRow: DefinitionRow, callerTrigger: CronTrigger, triggerIndex: number): Promise<ScheduleStateRow> {
    return await deps.schedules.transaction(async (tx) => {
      const now = deps.clock?.() ?? (await tx.databaseNow());
      const state = await tx.lockState(callerRow.id, triggerIndex);
      // Under the lock, apply the newest definition, not the caller's copy: a
      // reconcile that read version N must never roll back what version N+1's
      // writer already applied (the next fire would be lost).
      let row = callerRow;
      let trigger = callerTrigger;
      const fresh = await deps.definitions.get(callerRow.id);
      if (fresh !== undefined && fresh.version > callerRow.version) {
        const freshTrigger = fresh.definition.triggers[triggerIndex];
        if (freshTrigger?.type !== 'cron' && state !== undefined) return state;
        if (freshTrigger?.type === 'cron') {
          row = fresh;
          trigger = freshTrigger;
        }
      }
      if (state === undefined) {
        await tx.insertState({
          activityId: row.id,
          triggerIndex,
          scheduleId: scheduleIdFor(row.id, triggerIndex),
          trigger,
          // Fire times before the schedule existed were never due.
          processedThrough: now,
          active: row.enabled,
        });
        const created = await tx.lockState(row.id, triggerIndex);
        if (created === undefined) throw new Error(`schedule state ${row.id}/${triggerIndex} could not be created`);
        return created;
      }
      const { patch, fires, next } = applyDefinitionToState(state, row.enabled, trigger, now);
      await tx.insertFires(fires);
      if (Object.keys(patch).length > 0) await tx.updateState(row.id, triggerIndex, patch);
      return next;
    });
  }

  /** Makes the Temporal Schedule of one trigger match the desired one. */
  async function ensureTemporalSchedule(row: DefinitionRow, trigger: CronTrigger, triggerIndex: number, state: ScheduleStateRow): Promise<SyncOutcome> {
    const desired = desiredSchedule({ row, trigger, triggerIndex, taskQueue: deps.taskQueue, cause: pauseCause(row, state) });
    const handle = deps.client.schedule.getHandle(desired.scheduleId);
    let current: ScheduleDescription;
    try {
      current = await handle.describe();
    } catch (error) {
      if (!isScheduleNotFound(error)) throw error;
      // A reconcile that read Postgres before the activity was deleted (or
      // changed) must not resurrect its schedule: check again just before creating.
      const fresh = await deps.definitions.get(row.id);
      if (fresh === undefined || fresh.version > row.version) return 'unchanged';
      try {
        await deps.client.schedule.create(desired.options);
      } catch (createError) {
        if (createError instanceof ScheduleAlreadyRunning) return 'unchanged';
        throw createError;
      }
      logger.info({ scheduleId: desired.scheduleId, activityId: row.id }, 'schedule created');
      return 'created';
    }
    const existing = current.action.args?.[0] as Partial<ScheduleTickInput> | undefined;
    // A writer holding an older definition version never overwrites a newer schedule.
    if (existing?.definitionVersion !== undefined && existing.definitionVersion > row.version) return 'unchanged';
    if (existing?.revision === desired.revision && existing.definitionVersion !== undefined && current.state.paused === desired.paused) {
      return 'unchanged';
    }
    await handle.update(() => ({
      spec: desired.options.spec,
      action: desired.options.action,
      policies: desired.options.policies,
      state: { paused: desired.paused, note: desired.note },
    }));
    logger.info({ scheduleId: desired.scheduleId, activityId: row.id, paused: desired.paused }, 'schedule updated');
    return 'updated';
  }

  async function deleteTemporalSchedule(scheduleId: string): Promise<boolean> {
    try {
      await deps.client.schedule.getHandle(scheduleId).delete();
      logger.info({ scheduleId }, 'schedule deleted');
      return true;
    } catch (error) {
      if (isScheduleNotFound(error)) return false;
      throw error;
    }
  }

  /** Removes the schedule and state of a trigger that no longer exists (run and fire history stay). */
  async function retire(activityId: string, triggerIndex: number): Promise<boolean> {
    const deleted = await deleteTemporalSchedule(scheduleIdFor(activityId, triggerIndex));
    await deps.schedules.deleteState(activityId, triggerIndex);
    return deleted;
  }

  /** Whether the definition in Postgres (read now) still has a cron trigger at this index. */
  async function stillWanted(activityId: string, triggerIndex: number): Promise<boolean> {
    const row = await deps.definitions.get(activityId);
    return row?.definition.triggers[triggerIndex]?.type === 'cron';
  }

  async function sync(row: DefinitionRow): Promise<Array<{ scheduleId: string; outcome: SyncOutcome }>> {
    const results: Array<{ scheduleId: string; outcome: SyncOutcome }> = [];
    const wanted = cronTriggersOf(row.definition);
    for (const { trigger, triggerIndex } of wanted) {
      const state = await syncState(row, trigger, triggerIndex);
      results.push({ scheduleId: scheduleIdFor(row.id, triggerIndex), outcome: await ensureTemporalSchedule(row, trigger, triggerIndex, state) });
    }
    const wantedIndexes = new Set(wanted.map((entry) => entry.triggerIndex));
    for (const state of await deps.schedules.listStates(row.id)) {
      if (wantedIndexes.has(state.triggerIndex) || (await stillWanted(row.id, state.triggerIndex))) continue;
      await retire(row.id, state.triggerIndex);
      results.push({ scheduleId: state.scheduleId, outcome: 'deleted' });
    }
    return results;
  }

  function temporalView(description: ScheduleDescription): ScheduleView['temporal'] {
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

  async function views(row: DefinitionRow): Promise<ActivitySchedules> {
    const states = new Map((await deps.schedules.listStates(row.id)).map((state) => [state.triggerIndex, state]));
    const now = clock();
    const schedules: ScheduleView[] = [];
    for (const { trigger, triggerIndex } of cronTriggersOf(row.definition)) {
      const state = states.get(triggerIndex);
      const scheduleId = scheduleIdFor(row.id, triggerIndex);
      let temporal: ScheduleView['temporal'] = null;
      try {
        temporal = temporalView(await deps.client.schedule.getHandle(scheduleId).describe());
      } catch (error) {
        if (!isScheduleNotFound(error)) logger.warn({ err: error, scheduleId }, 'could not describe schedule');
      }
      const paused = state?.paused === true;
      schedules.push({
        trigger_index: triggerIndex,
        schedule_id: scheduleId,
        cron: trigger.cron,
        timezone: trigger.timezone,
        misfire_policy: trigger.misfire_policy,
        max_catchup: trigger.max_catchup,
        misfire_grace: trigger.misfire_grace,
        active: row.enabled,
        paused,
        pause_note: state?.pauseNote ?? null,
        paused_at: iso(state?.pausedAt ?? null),
        processed_through: (state?.processedThrough ?? now).toISOString(),
        next_fire_times:
          row.enabled && !paused ? nextFireTimes(trigger, now, NEXT_FIRE_TIMES).map((time) => formatFireTime(time, trigger.timezone)) : [],
        temporal,
        temporal_ui_url: `${uiUrl}/namespaces/${encodeURIComponent(deps.namespace)}/schedules/${encodeURIComponent(scheduleId)}`,
      });
    }
    return { activity_id: row.id, schedules };
  }

  async function requireCronStates(row: DefinitionRow): Promise<void> {
    if (cronTriggersOf(row.definition).length === 0) {
      throw new ConflictError(`activity ${row.id} has no cron triggers, so it has no schedule`);
    }
    // Make sure state rows and schedules exist (the activity may predate a failed sync).
    await sync(row);
  }

  return {
    /** Creates, updates (or pauses) and deletes the schedules of one live activity to match its definition. */
    sync,

    /** An activity was deleted: its schedules and schedule states go; runs and fire history stay. */
    async remove(row: Pick<DefinitionRow, 'id' | 'definition'>): Promise<void> {
      const indexes = new Set([...cronTriggersOf(row.definition).map((entry) => entry.triggerIndex)]);
      for (const state of await deps.schedules.listStates(row.id)) indexes.add(state.triggerIndex);
      for (const triggerIndex of indexes) await retire(row.id, triggerIndex);
    },

    /**
     * Makes Temporal match Postgres: creates missing schedules, updates
     * changed ones, deletes schedules (of this task queue) that no live cron
     * trigger wants. Idempotent: a second run reports no changes.
     */
    async reconcile(): Promise<ReconcileResponse> {
      const result: ReconcileResponse = { created: [], updated: [], deleted: [], unchanged: 0 };
      const wanted = new Set<string>();
      for (const row of await deps.schedules.listLiveDefinitions()) {
        for (const { triggerIndex } of cronTriggersOf(row.definition)) wanted.add(scheduleIdFor(row.id, triggerIndex));
        for (const { scheduleId, outcome } of await sync(row)) {
          if (outcome === 'unchanged') result.unchanged++;
          else result[outcome].push(scheduleId);
        }
      }
      for (const state of await deps.schedules.listStates()) {
        if (wanted.has(state.scheduleId) || (await stillWanted(state.activityId, state.triggerIndex))) continue;
        if (await retire(state.activityId, state.triggerIndex)) result.deleted.push(state.scheduleId);
      }
      for await (const summary of deps.client.schedule.list()) {
        const memo = summary.memo as { managedBy?: unknown; taskQueue?: unknown; activityId?: unknown; triggerIndex?: unknown } | undefined;
        if (memo?.managedBy !== MANAGED_BY || memo.taskQueue !== deps.taskQueue || wanted.has(summary.scheduleId)) continue;
        if (typeof memo.activityId === 'string' && typeof memo.triggerIndex === 'number' && (await stillWanted(memo.activityId, memo.triggerIndex))) continue;
        if (await deleteTemporalSchedule(summary.scheduleId)) result.deleted.push(summary.scheduleId);
      }
      return result;
    },

    /** The tick activity: decide and start what is due; an orphaned tick removes its schedule. */
    async processTick(input: ProcessScheduleTickInput): Promise<ProcessScheduleTickResult> {
      const result = await processor.processDue({
        activityId: input.activityId,
        triggerIndex: input.triggerIndex,
        ...(input.nominalTime === undefined ? {} : { nominal: new Date(input.nominalTime) }),
        origin: input.tickWorkflowId,
      });
      if (result.status === 'orphaned' && !(await stillWanted(input.activityId, input.triggerIndex))) {
        logger.warn({ activityId: input.activityId, triggerIndex: input.triggerIndex }, 'tick for a trigger that no longer exists; removing its schedule');
        await retire(input.activityId, input.triggerIndex);
      }
      return result;
    },

    /**
     * Decides what is due for every running (enabled, not paused) trigger.
     * The worker calls it at start-up and periodically, so fire times Temporal
     * never delivered (the server was down longer than the catch-up window)
     * still get their misfire decision without waiting for the next fire.
     */
    async processAllDue(): Promise<number> {
      let processed = 0;
      for (const state of await deps.schedules.listStates()) {
        if (!state.active || state.paused) continue;
        const result = await processor.processDue({ activityId: state.activityId, triggerIndex: state.triggerIndex, origin: 'sweep' });
        if (result.status === 'processed') processed++;
      }
      return processed;
    },

    async describe(activityId: string): Promise<ActivitySchedules> {
      return await views(await requireActivity(activityId));
    },

    /** Operator pause: recorded in Postgres first (reconciliation keeps it), then applied to Temporal. */
    async pause(activityId: string, note: string | null): Promise<ActivitySchedules> {
      const row = await requireActivity(activityId);
      await requireCronStates(row);
      await deps.schedules.setPaused(row.id, true, note);
      await sync(row);
      return await views(row);
    },

    /**
     * Operator resume: unpauses, then starts a tick per trigger right away so
     * the misfire policy decides the fire times missed while paused now, on a
     * worker, rather than at the next fire.
     */
    async resume(activityId: string, note: string | null): Promise<ActivitySchedules & { processing: Array<{ trigger_index: number; tick_workflow_id: string }> }> {
      const row = await requireActivity(activityId);
      await requireCronStates(row);
      const states = await deps.schedules.setPaused(row.id, false, null);
      await sync(row);
      const processing: Array<{ trigger_index: number; tick_workflow_id: string }> = [];
      if (row.enabled) {
        const now = clock();
        for (const { trigger, triggerIndex } of cronTriggersOf(row.definition)) {
          if (!states.some((state) => state.triggerIndex === triggerIndex)) continue;
          const desired = desiredSchedule({ row, trigger, triggerIndex, taskQueue: deps.taskQueue, cause: { kind: 'running' } });
          const workflowId = `${tickWorkflowIdFor(row.id, triggerIndex)}-resume-${now.toISOString()}`;
          await deps.client.workflow.start(SCHEDULE_TICK_WORKFLOW, {
            workflowId,
            taskQueue: deps.taskQueue,
            args: [desired.tickInput],
            staticSummary: `${row.name} · cron trigger ${triggerIndex} · resume${note === null ? '' : `: ${note}`}`,
          });
          processing.push({ trigger_index: triggerIndex, tick_workflow_id: workflowId });
        }
      }
      logger.info({ activityId: row.id, note }, 'schedules resumed');
      return { ...(await views(row)), processing };
    },

    /**
     * "Trigger now": one manual run `manual-{activity_id}:{key}`. The key is
     * the request's Idempotency-Key, so a retried request is the same run.
     */
    async triggerNow(activityId: string, key: string | undefined): Promise<TriggerNowResponse> {
      const row = await requireActivity(activityId);
      if (!row.enabled) throw new ConflictError(`activity ${row.id} is disabled; enable it before triggering it`);
      const runKey = key ?? randomUUID();
      const workflowId = manualRunWorkflowId(row.id, runKey);
      const existing = await deps.runs.getRunByWorkflowId(workflowId);
      const status =
        existing !== undefined
          ? 'duplicate'
          : await deps.starter.start({ workflowId, activity: snapshotOf(row), trigger: { type: 'manual', key: runKey, requested_at: clock().toISOString() } });
      return { activity_id: row.id, workflow_id: workflowId, run_id: runIdFor(workflowId), key: runKey, key_generated: key === undefined, status };
    },

    /**
     * Runs every nominal fire time in `[start, end]` that has no run yet, in
     * order, with the cron ids (so a backfilled time and a normal fire of the
     * same time are one run). Repeating the request starts nothing new.
     */
    async backfill(activityId: string, request: BackfillRequest): Promise<BackfillResponse> {
      const row = await requireActivity(activityId);
      if (!row.enabled) throw new ConflictError(`activity ${row.id} is disabled; enable it before backfilling it`);
      const start = new Date(request.start);
      const end = new Date(request.end);
      const now = clock();
      if (end.getTime() < start.getTime()) throw new InvalidInputError('end is before start', [{ path: 'end', message: 'must not be before start' }]);
      if (end.getTime() > now.getTime()) {
        throw new InvalidInputError('a backfill covers past fire times only', [{ path: 'end', message: `must not be in the future (now is ${now.toISOString()})` }]);
      }
      let triggers = cronTriggersOf(row.definition);
      if (request.trigger_index !== undefined) {
        triggers = triggers.filter((entry) => entry.triggerIndex === request.trigger_index);
        if (triggers.length === 0) {
          throw new InvalidInputError(`trigger ${request.trigger_index} is not a cron trigger of this activity`, [
            { path: 'trigger_index', message: 'must be the index of a cron trigger' },
          ]);
        }
      }
      if (triggers.length === 0) throw new ConflictError(`activity ${row.id} has no cron triggers to backfill`);

      const planned: Array<{ triggerIndex: number; trigger: CronTrigger; at: Date }> = [];
      for (const { trigger, triggerIndex } of triggers) {
        const range = fireTimesBetween(trigger, new Date(start.getTime() - 1), end, MAX_BACKFILL_FIRES, 'earliest');
        if (range.truncated || planned.length + range.times.length > MAX_BACKFILL_FIRES) {
          throw new InvalidInputError(`the range holds more than ${MAX_BACKFILL_FIRES} fire times; split it into smaller backfills`, [
            { path: 'end', message: `at most ${MAX_BACKFILL_FIRES} fire times per backfill` },
          ]);
        }
        planned.push(...range.times.map((at) => ({ triggerIndex, trigger, at })));
      }
      planned.sort((a, b) => a.at.getTime() - b.at.getTime() || a.triggerIndex - b.triggerIndex);

      // Backfill only re-runs times the schedule has already decided. A time after
      // processed_through (e.g. while paused) is the schedule's to run under its
      // misfire policy: a backfill there would overlap or pre-empt the windows it plans.
      const decidedThrough = new Map((await deps.schedules.listStates(row.id)).map((state) => [state.triggerIndex, state.processedThrough]));
      const undecided = planned.find(({ triggerIndex, at }) => {
        const through = decidedThrough.get(triggerIndex);
        return through === undefined || at.getTime() > through.getTime();
      });
      if (undecided !== undefined) {
        const through = decidedThrough.get(undecided.triggerIndex);
        throw new InvalidInputError(
          `fire time ${formatScheduledFor(undecided.at)} is not decided yet: it is the schedule's to run under its misfire policy (resume a paused schedule first)`,
          [{ path: 'end', message: `fire times after ${through === undefined ? 'the schedule was created' : formatScheduledFor(through)} cannot be backfilled yet` }],
        );
      }

      const fires: BackfillResponse['fires'] = [];
      const seen = new Set<string>();
      for (const { triggerIndex, trigger, at } of planned) {
        const workflowId = cronRunWorkflowId(row.id, at);
        const runId = runIdFor(workflowId);
        const windowStart = previousFireTime(trigger, at) ?? at;
        let status: 'started' | 'duplicate';
        if (seen.has(workflowId) || (await deps.runs.getRunByWorkflowId(workflowId)) !== undefined) {
          status = 'duplicate';
        } else {
          status = await deps.starter.start({
            workflowId,
            activity: snapshotOf(row),
            trigger: { type: 'backfill', scheduled_for: formatScheduledFor(at), window_start: formatScheduledFor(windowStart), window_end: formatScheduledFor(at) },
          });
        }
        seen.add(workflowId);
        await deps.schedules.recordBackfillFire({
          activityId: row.id,
          triggerIndex,
          scheduledFor: at,
          status,
          reason: 'backfill',
          triggerType: 'backfill',
          workflowId,
          runId,
          windowStart,
          windowEnd: at,
          lateByMs: now.getTime() - at.getTime(),
          detail: status === 'duplicate' ? 'backfill found the run already there' : 'started by a backfill',
        });
        fires.push({ trigger_index: triggerIndex, scheduled_for: formatScheduledFor(at), workflow_id: workflowId, run_id: runId, status });
      }
      logger.info({ activityId: row.id, start: request.start, end: request.end, fires: fires.length }, 'backfill done');
      return {
        activity_id: row.id,
        start: start.toISOString(),
        end: end.toISOString(),
        fires,
        started: fires.filter((fire) => fire.status === 'started').length,
        duplicate: fires.filter((fire) => fire.status === 'duplicate').length,
      };
    },

    /** Fire decisions of an activity, newest first. */
    async fires(activityId: string, query: { from?: Date; to?: Date; before?: { scheduledFor: Date; triggerIndex: number }; limit: number }): Promise<FireRecord[]> {
      const row = await deps.definitions.get(activityId);
      if (row === undefined) {
        // Deleted activities keep their history; only an id that never had any is unknown.
        const rows = await deps.schedules.listFires({ activityId, ...query });
        if (rows.length === 0) throw new NotFoundError('activity', activityId);
        return rows.map(toFireRecord);
      }
      return (await deps.schedules.listFires({ activityId, ...query })).map(toFireRecord);
    },

    /** "Why did / didn't this nominal time run?" */
    async explain(activityId: string, at: Date): Promise<FireExplanation> {
      const rows = await deps.schedules.findFiresAt(activityId, at);
      const scheduledFor = formatScheduledFor(at);
      if (rows.length > 0) {
        return { activity_id: activityId, scheduled_for: scheduledFor, explanation: rows.map(explainFire).join('; '), fires: rows.map(toFireRecord) };
      }
      const row = await requireActivity(activityId);
      const answer = (explanation: string): FireExplanation => ({ activity_id: activityId, scheduled_for: scheduledFor, explanation, fires: [] });
      const triggers = cronTriggersOf(row.definition);
      if (triggers.length === 0) return answer(`${scheduledFor}: the activity has no cron triggers`);
      const states = new Map((await deps.schedules.listStates(row.id)).map((state) => [state.triggerIndex, state]));
      const now = clock();
      for (const { trigger, triggerIndex } of triggers) {
        const isFireTime = fireTimesBetween(trigger, new Date(at.getTime() - 1), at, 1).times.length === 1;
        if (!isFireTime) continue;
        const state = states.get(triggerIndex);
        if (at.getTime() > now.getTime()) return answer(`${scheduledFor} is in the future: trigger ${triggerIndex} fires then`);
        if (state === undefined || at.getTime() < state.createdAt.getTime()) {
          return answer(`${scheduledFor} is before trigger ${triggerIndex}'s schedule existed; use a backfill to run it`);
        }
        if (at.getTime() > state.processedThrough.getTime()) {
          if (state.paused) return answer(`${scheduledFor} passed while the schedule is paused by an operator; resume applies the misfire policy to it`);
          if (!row.enabled) return answer(`${scheduledFor} passed while the activity is disabled; it will not run`);
          return answer(`${scheduledFor} is due but not decided yet: no worker has processed its tick (are workers running?)`);
        }
        return answer(`${scheduledFor} was processed but has no recorded decision (it predates the current trigger definition)`);
      }
      const previous = triggers.map(({ trigger }) => previousFireTime(trigger, at)).filter((time): time is Date => time !== null);
      const latest = previous.sort((a, b) => b.getTime() - a.getTime())[0];
      return answer(`${scheduledFor} is not a fire time of any cron trigger of this activity${latest === undefined ? '' : ` (the one before it is ${formatScheduledFor(latest)})`}`);
    },
  };
}

export type ScheduleManager = ReturnType<typeof createScheduleManager>;
