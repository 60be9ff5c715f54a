import type { ActivityDefinition, CronTrigger } from '@activity-core/contracts';
import { and, asc, desc, eq, getTableColumns, gte, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import { activityDefinitions, activityRuns, scheduleFires, scheduleStates } from '../schema';
import type { DefinitionRow } from './definitions-repository';

export type ScheduleStateRow = Omit<typeof scheduleStates.$inferSelect, 'trigger'> & { trigger: CronTrigger };
export type ScheduleFireRow = typeof scheduleFires.$inferSelect;
/**
 * A fire decision with what became of its run: the run's status and error
 * (null when the decision started no run, or its run is not recorded yet).
 * Answers "it was started, but did it run?" — a run its trigger's overlap
 * policy skipped, for one.
 */
export type ScheduleFireWithRun = ScheduleFireRow & {
  runStatus: string | null;
  runError: unknown;
  runCancelledByRun: string | null;
};

const fireWithRunColumns = {
  ...getTableColumns(scheduleFires),
  runStatus: activityRuns.status,
  runError: activityRuns.error,
  runCancelledByRun: activityRuns.cancelledByRun,
};

/** Statuses of a fire decision: runs go pending → started | duplicate; skips are final. */
export type FireStatus = 'pending' | 'started' | 'duplicate' | 'skipped';

/** Why a nominal fire time has (or has no) run. Kept in sync with `schedule_fires_reason_ck`. */
export type FireReason =
  | 'on_time'
  | 'misfire_catchup'
  | 'misfire_compress'
  | 'backfill'
  | 'misfire_skip'
  | 'catchup_limit'
  | 'compressed'
  | 'activity_disabled'
  | 'trigger_changed';

export interface NewScheduleFire {
  activityId: string;
  triggerIndex: number;
  scheduledFor: Date;
  rangeEnd?: Date | null;
  status: FireStatus;
  reason: FireReason;
  triggerType?: 'cron' | 'backfill' | null;
  workflowId?: string | null;
  runId?: string | null;
  windowStart?: Date | null;
  windowEnd?: Date | null;
  coveredBy?: string | null;
  lateByMs?: number | null;
  detail?: string | null;
}

export interface NewScheduleState {
  activityId: string;
  triggerIndex: number;
  scheduleId: string;
  trigger: CronTrigger;
  processedThrough: Date;
  active: boolean;
}

export type ScheduleStatePatch = Partial<
  Pick<
    ScheduleStateRow,
    'trigger' | 'processedThrough' | 'lastWindowEnd' | 'active' | 'paused' | 'pauseNote' | 'pausedAt' | 'scheduleId'
  >
>;

const toState = (row: typeof scheduleStates.$inferSelect): ScheduleStateRow => ({
  ...row,
  trigger: row.trigger as CronTrigger,
});

/** Largest `late_by_ms` stored; a decision years late is still "very late". */
const MAX_LATE_MS = 2_147_483_647;

/**
 * Durable state of the schedule manager. Decisions are made under the row
 * lock of the trigger's `schedule_states` row (see `transaction` + `lockState`);
 * fire rows are insert-only for the first decision of a nominal time, so a
 * replayed decision never overwrites the original answer.
 */
export function createSchedulesRepository(db: Db) {
  return {
    ...scheduleQueries(db),
    /** Runs `fn` in one transaction, with the queries bound to it. */
    async transaction<T>(fn: (tx: ScheduleQueries) => Promise<T>): Promise<T> {
      return await db.transaction(async (tx) => await fn(scheduleQueries(tx as unknown as Db)));
    },
  };
}

function scheduleQueries(db: Db) {
  return {
    /**
     * The database's clock. Fire decisions use it rather than each process's
     * own, so a worker or API host whose clock drifts cannot make on-time
     * fires look late, or skip the first fires after a trigger change.
     */
    async databaseNow(): Promise<Date> {
      const result = await db.execute<{ now: Date | string }>(sql`SELECT clock_timestamp() AS now`);
      const value = result.rows[0]?.now;
      return value instanceof Date ? value : new Date(String(value));
    },

    /** `SELECT ... FOR UPDATE`: only meaningful inside {@link transaction}. */
    async lockState(activityId: string, triggerIndex: number): Promise<ScheduleStateRow | undefined> {
      const [row] = await db
        .select()
        .from(scheduleStates)
        .where(and(eq(scheduleStates.activityId, activityId), eq(scheduleStates.triggerIndex, triggerIndex)))
        .for('update');
      return row === undefined ? undefined : toState(row);
    },

    async getState(activityId: string, triggerIndex: number): Promise<ScheduleStateRow | undefined> {
      const [row] = await db
        .select()
        .from(scheduleStates)
        .where(and(eq(scheduleStates.activityId, activityId), eq(scheduleStates.triggerIndex, triggerIndex)));
      return row === undefined ? undefined : toState(row);
    },

    /** Creates the state of a newly scheduled trigger; a concurrent creator wins and this is a no-op. */
    async insertState(state: NewScheduleState): Promise<void> {
      await db.insert(scheduleStates).values(state).onConflictDoNothing();
    },

    async updateState(activityId: string, triggerIndex: number, patch: ScheduleStatePatch): Promise<void> {
      await db
        .update(scheduleStates)
        .set({ ...patch, updatedAt: sql`now()` })
        .where(and(eq(scheduleStates.activityId, activityId), eq(scheduleStates.triggerIndex, triggerIndex)));
    },

    /** Every state, or one activity's, ordered by activity and trigger. */
    async listStates(activityId?: string): Promise<ScheduleStateRow[]> {
      const rows = await db
        .select()
        .from(scheduleStates)
        .where(activityId === undefined ? undefined : eq(scheduleStates.activityId, activityId))
        .orderBy(asc(scheduleStates.activityId), asc(scheduleStates.triggerIndex));
      return rows.map(toState);
    },

    async deleteState(activityId: string, triggerIndex: number): Promise<void> {
      await db
        .delete(scheduleStates)
        .where(and(eq(scheduleStates.activityId, activityId), eq(scheduleStates.triggerIndex, triggerIndex)));
    },

    /** Operator pause / resume of every cron trigger of an activity. Returns the updated states. */
    async setPaused(activityId: string, paused: boolean, note: string | null): Promise<ScheduleStateRow[]> {
      const rows = await db
        .update(scheduleStates)
        .set({
          paused,
          pauseNote: paused ? note : null,
          pausedAt: paused ? sql`coalesce(${scheduleStates.pausedAt}, now())` : null,
          updatedAt: sql`now()`,
        })
        .where(eq(scheduleStates.activityId, activityId))
        .returning();
      return rows.map(toState).sort((a, b) => a.triggerIndex - b.triggerIndex);
    },

    /**
     * Records decisions. The first decision for a nominal time wins: a
     * conflicting row (a backfill got there first, a retried decision) is
     * left as it is. Returns how many rows were new.
     */
    async insertFires(fires: NewScheduleFire[]): Promise<number> {
      if (fires.length === 0) return 0;
      let inserted = 0;
      // Chunked: a long outage may produce up to a thousand rows at once.
      for (let offset = 0; offset < fires.length; offset += 500) {
        const chunk = fires
          .slice(offset, offset + 500)
          .map((fire) => ({ ...fire, lateByMs: clampLate(fire.lateByMs) }));
        const rows = await db
          .insert(scheduleFires)
          .values(chunk)
          .onConflictDoNothing()
          .returning({ at: scheduleFires.scheduledFor });
        inserted += rows.length;
      }
      return inserted;
    },

    /** Runs decided but not yet confirmed started, oldest first. */
    async listPendingFires(activityId: string, triggerIndex: number): Promise<ScheduleFireRow[]> {
      return await db
        .select()
        .from(scheduleFires)
        .where(
          and(
            eq(scheduleFires.activityId, activityId),
            eq(scheduleFires.triggerIndex, triggerIndex),
            eq(scheduleFires.status, 'pending'),
          ),
        )
        .orderBy(asc(scheduleFires.scheduledFor));
    },

    /** Every trigger with a decided run whose start is not confirmed yet (the workers' sweep starts them). */
    async listTriggersWithPendingFires(): Promise<Array<{ activityId: string; triggerIndex: number }>> {
      return await db
        .selectDistinct({ activityId: scheduleFires.activityId, triggerIndex: scheduleFires.triggerIndex })
        .from(scheduleFires)
        .where(eq(scheduleFires.status, 'pending'));
    },

    /**
     * pending → started | duplicate. Two drains racing on one decision both
     * try to start it; one gets `started`, the other `duplicate`, in either
     * order of writes. `started` wins, so the record says this decision's run
     * was started here; `duplicate` stays only when no drain started it (a
     * backfill or an earlier start got there first).
     */
    async completeFire(
      activityId: string,
      triggerIndex: number,
      scheduledFor: Date,
      status: 'started' | 'duplicate',
    ): Promise<void> {
      await db
        .update(scheduleFires)
        .set({ status, updatedAt: sql`now()` })
        .where(
          and(
            eq(scheduleFires.activityId, activityId),
            eq(scheduleFires.triggerIndex, triggerIndex),
            eq(scheduleFires.scheduledFor, scheduledFor),
            status === 'started'
              ? inArray(scheduleFires.status, ['pending', 'duplicate'])
              : eq(scheduleFires.status, 'pending'),
          ),
        );
    },

    /**
     * Records a backfilled fire time. A time recorded as skipped (e.g. by
     * `misfire_skip`) gets a run, and its row says so, keeping the skip
     * reason in `detail`; a time that already has a run keeps its row.
     */
    async recordBackfillFire(fire: NewScheduleFire): Promise<void> {
      await db
        .insert(scheduleFires)
        .values(fire)
        .onConflictDoUpdate({
          target: [scheduleFires.activityId, scheduleFires.triggerIndex, scheduleFires.scheduledFor],
          set: {
            status: sql`excluded.status`,
            reason: sql`excluded.reason`,
            triggerType: sql`excluded.trigger_type`,
            workflowId: sql`excluded.workflow_id`,
            runId: sql`excluded.run_id`,
            windowStart: sql`excluded.window_start`,
            windowEnd: sql`excluded.window_end`,
            detail: sql`'backfilled; was skipped (' || ${scheduleFires.reason} || ')'`,
            updatedAt: sql`now()`,
          },
          // Only a single-time skip becomes a run; a range row keeps standing for the rest of its range.
          setWhere: sql`${scheduleFires.status} = 'skipped' AND ${scheduleFires.rangeEnd} IS NULL`,
        });
    },

    /** Decisions of one activity, newest nominal time first, optionally within [from, to]. */
    async listFires(options: {
      activityId: string;
      from?: Date;
      to?: Date;
      before?: { scheduledFor: Date; triggerIndex: number };
      limit: number;
    }): Promise<ScheduleFireWithRun[]> {
      const conditions: SQL[] = [eq(scheduleFires.activityId, options.activityId)];
      if (options.from !== undefined)
        conditions.push(or(gte(scheduleFires.scheduledFor, options.from), gte(scheduleFires.rangeEnd, options.from))!);
      if (options.to !== undefined) conditions.push(lte(scheduleFires.scheduledFor, options.to));
      // Keyset on (scheduled_for, trigger_index): two triggers can share an instant.
      if (options.before !== undefined) {
        const { scheduledFor, triggerIndex } = options.before;
        conditions.push(
          or(
            lt(scheduleFires.scheduledFor, scheduledFor),
            and(eq(scheduleFires.scheduledFor, scheduledFor), lt(scheduleFires.triggerIndex, triggerIndex)),
          )!,
        );
      }
      return await db
        .select(fireWithRunColumns)
        .from(scheduleFires)
        .leftJoin(activityRuns, eq(activityRuns.runId, scheduleFires.runId))
        .where(and(...conditions))
        .orderBy(desc(scheduleFires.scheduledFor), desc(scheduleFires.triggerIndex))
        .limit(options.limit);
    },

    /** The decisions that answer for one instant: an exact row, or a range row covering it. */
    async findFiresAt(activityId: string, at: Date): Promise<ScheduleFireWithRun[]> {
      return await db
        .select(fireWithRunColumns)
        .from(scheduleFires)
        .leftJoin(activityRuns, eq(activityRuns.runId, scheduleFires.runId))
        .where(
          and(
            eq(scheduleFires.activityId, activityId),
            or(
              eq(scheduleFires.scheduledFor, at),
              and(lte(scheduleFires.scheduledFor, at), gte(scheduleFires.rangeEnd, at)),
            ),
          ),
        )
        .orderBy(asc(scheduleFires.triggerIndex));
    },

    /**
     * One live activity, read on this repository's connection: inside a
     * {@link transaction} it does not take a second pool connection while the
     * state lock is held (many ticks at once must not exhaust the pool).
     */
    async getLiveDefinition(activityId: string): Promise<DefinitionRow | undefined> {
      const [row] = await db
        .select()
        .from(activityDefinitions)
        .where(and(eq(activityDefinitions.id, activityId), isNull(activityDefinitions.deletedAt)));
      return row === undefined ? undefined : { ...row, definition: row.definition as ActivityDefinition };
    },

    /** Every live (not deleted) activity, enabled or not: what reconciliation makes Temporal match. */
    async listLiveDefinitions(): Promise<DefinitionRow[]> {
      const rows = await db
        .select()
        .from(activityDefinitions)
        .where(isNull(activityDefinitions.deletedAt))
        .orderBy(asc(activityDefinitions.createdAt), asc(activityDefinitions.id));
      return rows.map((row) => ({ ...row, definition: row.definition as ActivityDefinition }));
    },
  };
}

function clampLate(value: number | null | undefined): number | null {
  if (value === undefined || value === null) return null;
  return Math.max(-MAX_LATE_MS, Math.min(MAX_LATE_MS, Math.round(value)));
}

export type ScheduleQueries = ReturnType<typeof scheduleQueries>;
export type SchedulesRepository = ReturnType<typeof createSchedulesRepository>;
