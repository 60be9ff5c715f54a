/**
 * Operator commands on an activity's schedules: pause, resume, trigger now
 * and backfill. Each records its intent in Postgres first, then makes
 * Temporal match; what a backfill does is decided by the pure
 * {@link planBackfill}, which this module only carries out.
 */
import { randomUUID } from 'node:crypto';
import {
  ConflictError,
  formatScheduledFor,
  manualRunWorkflowId,
  resumeTickWorkflowId,
  runIdFor,
  type ActivitySchedules,
  type BackfillRequest,
  type BackfillResponse,
  type TriggerNowResponse,
} from '@activity-core/contracts';
import type { DefinitionRow } from '@activity-core/db';
import { SCHEDULE_TICK_WORKFLOW } from '@activity-core/temporal/client';
import { MAX_BACKFILL_FIRES, planBackfill } from './backfill-plan';
import { snapshotOf } from './fire-processor';
import { requireActivity, type ScheduleManagerDeps } from './schedule-deps';
import { cronTriggersOf, desiredSchedule } from './schedule-options';
import type { ScheduleQueries } from './schedule-queries';
import type { ScheduleSync } from './schedule-sync';

/**
 * Fire-log rows read to recognise runs a backfill would repeat. Beyond it (an
 * activity whose other triggers crowd the range) the plan misses some, and
 * the run records and REJECT_DUPLICATE still keep them from starting twice.
 */
const BACKFILL_FIRE_LOG_LIMIT = 2 * MAX_BACKFILL_FIRES;

export function createScheduleCommands(
  deps: ScheduleManagerDeps,
  parts: { sync: Pick<ScheduleSync, 'sync'>; queries: Pick<ScheduleQueries, 'viewsOf'> },
) {
  const clock = deps.clock ?? (() => new Date());
  const { logger } = deps;
  const { sync } = parts.sync;
  const { viewsOf } = parts.queries;

  /** Refuses an activity without cron triggers; makes sure its states and schedules exist (it may predate a failed sync). */
  async function requireCronStates(row: DefinitionRow): Promise<void> {
    if (cronTriggersOf(row.definition).length === 0) {
      throw new ConflictError(`activity ${row.id} has no cron triggers, so it has no schedule`);
    }
    await sync(row);
  }

  return {
    /** Operator pause: recorded in Postgres first (reconciliation keeps it), then applied to Temporal. */
    async pause(activityId: string, note: string | null): Promise<ActivitySchedules> {
      const row = await requireActivity(deps.definitions, activityId);
      await requireCronStates(row);
      await deps.schedules.setPaused(row.id, true, note);
      await sync(row);
      return await viewsOf(row);
    },

    /**
     * Operator resume: unpauses, then starts a tick per trigger right away so
     * the misfire policy decides the fire times missed while paused now, on a
     * worker, rather than at the next fire.
     */
    async resume(
      activityId: string,
      note: string | null,
    ): Promise<ActivitySchedules & { processing: Array<{ trigger_index: number; tick_workflow_id: string }> }> {
      const row = await requireActivity(deps.definitions, activityId);
      await requireCronStates(row);
      const states = await deps.schedules.setPaused(row.id, false, null);
      await sync(row);
      const processing: Array<{ trigger_index: number; tick_workflow_id: string }> = [];
      if (row.enabled) {
        const now = clock();
        for (const { trigger, triggerIndex } of cronTriggersOf(row.definition)) {
          if (!states.some((state) => state.triggerIndex === triggerIndex)) continue;
          const desired = desiredSchedule({
            row,
            trigger,
            triggerIndex,
            taskQueue: deps.taskQueue,
            cause: { kind: 'running' },
          });
          const workflowId = resumeTickWorkflowId(row.id, triggerIndex, now);
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
      return { ...(await viewsOf(row)), processing };
    },

    /**
     * "Trigger now": one manual run `manual-{activity_id}:{key}`. The key is
     * the request's Idempotency-Key, so a retried request is the same run.
     */
    async triggerNow(activityId: string, key: string | undefined): Promise<TriggerNowResponse> {
      const row = await requireActivity(deps.definitions, activityId);
      if (!row.enabled) throw new ConflictError(`activity ${row.id} is disabled; enable it before triggering it`);
      const runKey = key ?? randomUUID();
      const workflowId = manualRunWorkflowId(row.id, runKey);
      const existing = await deps.runs.getRunByWorkflowId(workflowId);
      const status =
        existing !== undefined
          ? 'duplicate'
          : await deps.starter.start({
              workflowId,
              activity: snapshotOf(row),
              trigger: { type: 'manual', key: runKey, requested_at: clock().toISOString() },
            });
      return {
        activity_id: row.id,
        workflow_id: workflowId,
        run_id: runIdFor(workflowId),
        key: runKey,
        key_generated: key === undefined,
        status,
      };
    },

    /**
     * Runs every nominal fire time in `[start, end]` that has no run yet, in
     * order, with the cron ids (so a backfilled time and a normal fire of the
     * same time are one run). Repeating the request starts nothing new.
     */
    async backfill(activityId: string, request: BackfillRequest): Promise<BackfillResponse> {
      const row = await requireActivity(deps.definitions, activityId);
      const start = new Date(request.start);
      const end = new Date(request.end);
      const now = clock();
      const states = await deps.schedules.listStates(row.id);
      const existingFires =
        end.getTime() < start.getTime()
          ? []
          : await deps.schedules.listFires({
              activityId: row.id,
              from: start,
              to: end,
              limit: BACKFILL_FIRE_LOG_LIMIT,
            });
      const plan = planBackfill({
        activity: row,
        triggers: cronTriggersOf(row.definition),
        start,
        end,
        ...(request.trigger_index === undefined ? {} : { triggerIndex: request.trigger_index }),
        processedThrough: new Map(states.map((state) => [state.triggerIndex, state.processedThrough])),
        existingFires,
        now,
      });
      if (!plan.ok) throw plan.error;

      const fires: BackfillResponse['fires'] = [];
      for (const fire of plan.fires) {
        const scheduledFor = formatScheduledFor(fire.scheduledFor);
        const status =
          fire.action.kind === 'duplicate' || (await deps.runs.getRunByWorkflowId(fire.workflowId)) !== undefined
            ? 'duplicate'
            : await deps.starter.start({
                workflowId: fire.workflowId,
                activity: snapshotOf(row),
                trigger: {
                  type: 'backfill',
                  scheduled_for: scheduledFor,
                  window_start: formatScheduledFor(fire.windowStart),
                  window_end: scheduledFor,
                },
                // The request's priority, else runPriority's default for a backfill (one lower than the definition's).
                ...(request.priority === undefined ? {} : { priority: request.priority }),
              });
        await deps.schedules.recordBackfillFire({
          activityId: row.id,
          triggerIndex: fire.triggerIndex,
          scheduledFor: fire.scheduledFor,
          status,
          reason: 'backfill',
          triggerType: 'backfill',
          workflowId: fire.workflowId,
          runId: fire.runId,
          windowStart: fire.windowStart,
          windowEnd: fire.scheduledFor,
          lateByMs: fire.lateByMs,
          detail: status === 'duplicate' ? 'backfill found the run already there' : 'started by a backfill',
        });
        fires.push({
          trigger_index: fire.triggerIndex,
          scheduled_for: scheduledFor,
          workflow_id: fire.workflowId,
          run_id: fire.runId,
          status,
        });
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
  };
}
