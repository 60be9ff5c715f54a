import type { RunStatus, TaskStatus, TriggerType } from '@activity-core/contracts';
import { and, asc, desc, eq, getTableColumns, inArray, isNull, lt, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import type { Cursor } from '../cursor';
import { activityRuns, eventRoutes, taskInstances } from '../schema';

export type RunRow = typeof activityRuns.$inferSelect;

/**
 * A run row as the API shows it: with the `not_before` of the event route that started it, when
 * that route's throttle delayed it (docs/pacing.md); null for every other run, re-runs included.
 */
export type RunRowWithDelay = RunRow & { notBefore: Date | null };

/** The route that started a run: its event's route for its activity, naming this very workflow (not a re-run's). */
const startingRoute = and(
  eq(eventRoutes.eventId, activityRuns.eventId),
  eq(eventRoutes.activityId, activityRuns.activityId),
  eq(eventRoutes.workflowId, activityRuns.workflowId),
);
const runWithDelay = { ...getTableColumns(activityRuns), notBefore: eventRoutes.notBefore };
export type TaskInstanceRow = typeof taskInstances.$inferSelect;

export interface NewRun {
  runId: string;
  workflowId: string;
  activityId: string;
  activityVersion: number;
  triggerType: TriggerType;
  scheduledFor?: Date | null;
  eventId?: string | null;
  windowStart?: Date | null;
  windowEnd?: Date | null;
  /** Only for runs started by a `run_activity` task: the calling run. */
  parentRunId?: string | null;
  /** The Temporal priority the run was started with (1 highest … 5); null when its start named none. */
  priority?: number | null;
  /** The Temporal fairness key the run was started with; null when its start named none. */
  fairnessKey?: string | null;
}

export interface ErrorInfo {
  message: string;
  type?: string;
  [key: string]: unknown;
}

export interface TaskInstanceUpsert {
  id: string;
  runId: string;
  taskType: string;
  taskIndex: number;
  workflowId: string;
  status: TaskStatus;
  attemptCount?: number;
  result?: unknown;
  error?: ErrorInfo | null;
  /** The task's key in the definition (graph runs). */
  taskKey?: string;
  /** The item of a `for_each` task. */
  itemIndex?: number;
  /** Why a skipped task did not run. */
  detail?: unknown;
}

const TERMINAL: TaskStatus[] = ['succeeded', 'failed', 'cancelled', 'skipped'];

export function createRunsRepository(db: Db) {
  return {
    /** `INSERT ... ON CONFLICT DO NOTHING`: a retried log_run never makes a second row. */
    async insertRun(run: NewRun): Promise<{ inserted: boolean }> {
      const rows = await db
        .insert(activityRuns)
        .values({ ...run, status: 'running' })
        .onConflictDoNothing({ target: activityRuns.runId })
        .returning({ runId: activityRuns.runId });
      return { inserted: rows.length > 0 };
    },

    /**
     * Records a run's outcome. Writing the same outcome again changes nothing
     * (finished_at keeps its first value), so activity retries are harmless.
     */
    async setRunStatus(runId: string, status: Exclude<RunStatus, 'running'>, error: ErrorInfo | null): Promise<void> {
      await db
        .update(activityRuns)
        .set({ status, error, finishedAt: sql`coalesce(${activityRuns.finishedAt}, now())`, updatedAt: sql`now()` })
        .where(and(eq(activityRuns.runId, runId), ne(activityRuns.status, status)));
    },

    /**
     * `running` rows not confirmed since `checkedBefore` (never-checked ones
     * first): the run reconciler asks Temporal about each.
     */
    async listRunningToCheck(checkedBefore: Date, startedBefore: Date, limit: number): Promise<RunRow[]> {
      return await db
        .select()
        .from(activityRuns)
        .where(
          and(
            inArray(activityRuns.status, ['running', 'waiting_for_slot']),
            lt(activityRuns.startedAt, startedBefore),
            or(isNull(activityRuns.checkedAt), lt(activityRuns.checkedAt, checkedBefore)),
          ),
        )
        .orderBy(sql`${activityRuns.checkedAt} ASC NULLS FIRST`, asc(activityRuns.startedAt))
        .limit(limit);
    },

    /**
     * Concurrency: a `running` row becomes `waiting_for_slot` while its run is
     * queued (`waiting: true`), and back once it holds a slot. Only between
     * those two statuses, so a late retry never reopens a finished run.
     */
    async setRunWaiting(runId: string, waiting: boolean): Promise<void> {
      const [from, to] = waiting ? ['running', 'waiting_for_slot'] : ['waiting_for_slot', 'running'];
      await db
        .update(activityRuns)
        .set({ status: to, updatedAt: sql`now()` })
        .where(and(eq(activityRuns.runId, runId), eq(activityRuns.status, from)));
    },

    /**
     * Overlap `cancel_other`: records which newer cron run asked for this
     * run's cancellation, before the request goes to Temporal. Only on a run
     * still open, and only the first time.
     */
    async markCancelledByRun(workflowId: string, byWorkflowId: string): Promise<void> {
      await db
        .update(activityRuns)
        .set({ cancelledByRun: byWorkflowId, updatedAt: sql`now()` })
        .where(
          and(
            eq(activityRuns.workflowId, workflowId),
            inArray(activityRuns.status, ['running', 'waiting_for_slot']),
            isNull(activityRuns.cancelledByRun),
          ),
        );
    },

    async markChecked(runId: string): Promise<void> {
      await db
        .update(activityRuns)
        .set({ checkedAt: sql`now()` })
        .where(eq(activityRuns.runId, runId));
    },

    /** One run, with the delay of the route that started it (a primary-key lookup of that route). */
    async getRun(runId: string): Promise<RunRowWithDelay | undefined> {
      const [row] = await db
        .select(runWithDelay)
        .from(activityRuns)
        .leftJoin(eventRoutes, startingRoute)
        .where(eq(activityRuns.runId, runId));
      return row;
    },

    async getRunByWorkflowId(workflowId: string): Promise<RunRow | undefined> {
      const [row] = await db.select().from(activityRuns).where(eq(activityRuns.workflowId, workflowId));
      return row;
    },

    async listRuns(options: {
      limit: number;
      cursor?: Cursor;
      activityId?: string;
      status?: RunStatus;
      triggerType?: TriggerType;
      eventId?: string;
    }): Promise<RunRowWithDelay[]> {
      const conditions: SQL[] = [];
      if (options.activityId !== undefined) conditions.push(eq(activityRuns.activityId, options.activityId));
      if (options.status !== undefined) conditions.push(eq(activityRuns.status, options.status));
      if (options.triggerType !== undefined) conditions.push(eq(activityRuns.triggerType, options.triggerType));
      if (options.eventId !== undefined) conditions.push(eq(activityRuns.eventId, options.eventId));
      if (options.cursor !== undefined) {
        conditions.push(
          or(
            lt(activityRuns.createdAt, options.cursor.createdAt),
            and(eq(activityRuns.createdAt, options.cursor.createdAt), lt(activityRuns.runId, options.cursor.id)),
          )!,
        );
      }
      return await db
        .select(runWithDelay)
        .from(activityRuns)
        .leftJoin(eventRoutes, startingRoute)
        .where(conditions.length > 0 ? and(...conditions) : undefined)
        .orderBy(desc(activityRuns.createdAt), desc(activityRuns.runId))
        .limit(options.limit);
    },

    /**
     * Upsert on the deterministic id. A terminal status is never overwritten
     * by `running` (a late retry of the first write cannot resurrect a task),
     * and attempt_count only grows.
     */
    async upsertTaskInstance(task: TaskInstanceUpsert): Promise<void> {
      const terminal = TERMINAL.includes(task.status);
      await db
        .insert(taskInstances)
        .values({
          id: task.id,
          runId: task.runId,
          taskType: task.taskType,
          taskIndex: task.taskIndex,
          workflowId: task.workflowId,
          status: task.status,
          attemptCount: task.attemptCount ?? 0,
          result: task.result ?? null,
          error: task.error ?? null,
          taskKey: task.taskKey ?? null,
          itemIndex: task.itemIndex ?? null,
          detail: task.detail ?? null,
          startedAt: sql`now()`,
          finishedAt: terminal ? sql`now()` : null,
        })
        .onConflictDoUpdate({
          target: taskInstances.id,
          set: {
            status: sql`excluded.status`,
            attemptCount: sql`greatest(${taskInstances.attemptCount}, excluded.attempt_count)`,
            result: sql`coalesce(excluded.result, ${taskInstances.result})`,
            error: sql`excluded.error`,
            finishedAt: terminal ? sql`coalesce(${taskInstances.finishedAt}, now())` : sql`${taskInstances.finishedAt}`,
            updatedAt: sql`now()`,
          },
          setWhere: terminal
            ? sql`${taskInstances.status} IS DISTINCT FROM excluded.status OR ${taskInstances.finishedAt} IS NULL`
            : sql`${taskInstances.status} NOT IN ('succeeded','failed','cancelled','skipped')`,
        });
    },

    /** Notes that attempt N of a task's work has begun. */
    async recordTaskAttempt(taskInstanceId: string, attempt: number): Promise<void> {
      await db
        .update(taskInstances)
        .set({ attemptCount: sql`greatest(${taskInstances.attemptCount}, ${attempt})`, updatedAt: sql`now()` })
        .where(eq(taskInstances.id, taskInstanceId));
    },

    async listTasks(runId: string): Promise<TaskInstanceRow[]> {
      return await db
        .select()
        .from(taskInstances)
        .where(eq(taskInstances.runId, runId))
        .orderBy(asc(taskInstances.taskIndex), sql`${taskInstances.itemIndex} nulls first`);
    },
  };
}

export type RunsRepository = ReturnType<typeof createRunsRepository>;
