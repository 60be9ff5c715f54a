/**
 * Keeps Temporal Schedules in step with Postgres (ADR 0010). Postgres is the
 * source of truth: the definition says which schedules exist and how they
 * fire, `schedule_states` says whether an operator paused them and how far
 * fire times have been decided. Temporal is made to match, by the API when a
 * definition changes and by every worker's periodic reconciliation.
 *
 * Every step is safe against a concurrent writer holding an older copy of the
 * definition: state changes are applied under the trigger's row lock from the
 * newest definition, an older definition version never overwrites a newer
 * schedule, and a schedule is never (re)created for an activity deleted or
 * changed since it was read.
 */
import { temporalScheduleId, type CronTrigger, type ReconcileResponse } from '@activity-core/contracts';
import type { DefinitionRow, ScheduleStateRow } from '@activity-core/db';
import { ScheduleAlreadyRunning, type ScheduleDescription } from '@temporalio/client';
import { forEachConcurrently } from './bounded-parallel';
import { applyDefinitionToState } from './fire-processor';
import { isScheduleNotFound, type ScheduleManagerDeps } from './schedule-deps';
import { cronTriggersOf, desiredSchedule, MANAGED_BY, pauseCauseOf, type DesiredSchedule } from './schedule-options';
import { SweepMemo, yieldToEventLoop } from './sweep-memo';
import { listSchedules, type ListedSchedule } from './schedule-listing';
import { compareDescription, listedAsDesired, stateInStep } from './sweep-plan';

/** What keeping one schedule in step did. */
export type SyncOutcome = 'created' | 'updated' | 'unchanged' | 'deleted';

export interface ReconcileOptions {
  /**
   * How a reconciliation learns which schedules already match (ADR 0042).
   * `describe` (the default): describes every schedule, so it is exact as of
   * the call. `listing`: a schedule that Temporal's schedule listing shows as
   * desired is left alone without a description; the listing is eventually
   * consistent, so a change made in Temporal directly a moment before is
   * corrected by the next reconciliation instead. The workers' periodic sweep
   * uses `listing`.
   */
  compareWith?: 'describe' | 'listing';
}

/** Schedule descriptions in flight at once (each is a query of the schedule's workflow in Temporal). */
const DESCRIBE_CONCURRENCY = 16;
/** Triggers synced at once; each holds one Postgres connection for its locked transaction. */
const WRITE_CONCURRENCY = 4;
/** Entries per ListSchedules page (Temporal's usual maximum). */
const LIST_PAGE_SIZE = 1000;

export function createScheduleSync(deps: ScheduleManagerDeps) {
  const { logger } = deps;
  /** The desired schedule of each trigger, remembered between reconciliations (hashing and cron validation are most of their CPU time). */
  const desiredMemo = new SweepMemo<DesiredSchedule>();

  /** Writes (or creates) the trigger's state under its lock, applying definition changes. */
  async function syncState(
    callerRow: DefinitionRow,
    callerTrigger: CronTrigger,
    triggerIndex: number,
  ): Promise<ScheduleStateRow> {
    return await deps.schedules.transaction(async (tx) => {
      const now = deps.clock?.() ?? (await tx.databaseNow());
      const state = await tx.lockState(callerRow.id, triggerIndex);
      // Under the lock, apply the newest definition, not the caller's copy: a
      // reconcile that read version N must never roll back what version N+1's
      // writer already applied (the next fire would be lost).
      let row = callerRow;
      let trigger = callerTrigger;
      // On the transaction's connection: a second pool connection while the lock is held could exhaust the pool.
      const fresh = await tx.getLiveDefinition(callerRow.id);
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
          scheduleId: temporalScheduleId(row.id, triggerIndex),
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
  async function ensureTemporalSchedule(
    row: DefinitionRow,
    trigger: CronTrigger,
    triggerIndex: number,
    state: ScheduleStateRow,
  ): Promise<SyncOutcome> {
    const desired = desiredSchedule({
      row,
      trigger,
      triggerIndex,
      taskQueue: deps.taskQueue,
      cause: pauseCauseOf(row, state),
    });
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
    // 'newer': a writer holding an older definition version never overwrites a newer schedule.
    if (compareDescription(current, desired, row.version) !== 'differs') return 'unchanged';
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
    const deleted = await deleteTemporalSchedule(temporalScheduleId(activityId, triggerIndex));
    await deps.schedules.deleteState(activityId, triggerIndex);
    return deleted;
  }

  /** Whether the definition in Postgres (read now) still has a cron trigger at this index. */
  async function stillWanted(activityId: string, triggerIndex: number): Promise<boolean> {
    const row = await deps.definitions.get(activityId);
    return row?.definition.triggers[triggerIndex]?.type === 'cron';
  }

  /** The full path for one trigger: its state under the lock, then its Temporal Schedule. */
  async function syncTrigger(row: DefinitionRow, trigger: CronTrigger, triggerIndex: number): Promise<SyncOutcome> {
    const state = await syncState(row, trigger, triggerIndex);
    return await ensureTemporalSchedule(row, trigger, triggerIndex, state);
  }

  /** Creates, updates (or pauses) and deletes the schedules of one live activity to match its definition. */
  async function sync(row: DefinitionRow): Promise<Array<{ scheduleId: string; outcome: SyncOutcome }>> {
    const results: Array<{ scheduleId: string; outcome: SyncOutcome }> = [];
    const wanted = cronTriggersOf(row.definition);
    for (const { trigger, triggerIndex } of wanted) {
      results.push({
        scheduleId: temporalScheduleId(row.id, triggerIndex),
        outcome: await syncTrigger(row, trigger, triggerIndex),
      });
    }
    const wantedIndexes = new Set(wanted.map((entry) => entry.triggerIndex));
    for (const state of await deps.schedules.listStates(row.id)) {
      if (wantedIndexes.has(state.triggerIndex) || (await stillWanted(row.id, state.triggerIndex))) continue;
      await retire(row.id, state.triggerIndex);
      results.push({ scheduleId: state.scheduleId, outcome: 'deleted' });
    }
    return results;
  }

  return {
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
     *
     * Reads in bulk (states, definitions, the schedule listing), settles the
     * triggers that are already in step without writing anything, and takes
     * only the others through the full locked path of {@link sync}.
     */
    async reconcile(options: ReconcileOptions = {}): Promise<ReconcileResponse> {
      const compareWith = options.compareWith ?? 'describe';
      const result: ReconcileResponse = { created: [], updated: [], deleted: [], unchanged: 0 };
      // States before definitions: a trigger registered between the two reads looks new (full path), never orphaned.
      const states = await deps.schedules.listStates();
      const stateById = new Map(states.map((state) => [state.scheduleId, state]));
      const rows = await deps.schedules.listLiveDefinitions();
      const listing = new Map<string, ListedSchedule>();
      const listingStats = { undecodable: 0 };
      for await (const entry of listSchedules(deps.client, LIST_PAGE_SIZE, listingStats)) {
        listing.set(entry.scheduleId, entry);
        if (listing.size % 500 === 0) await yieldToEventLoop();
      }
      if (listingStats.undecodable > 0)
        logger.debug(
          { undecodable: listingStats.undecodable },
          'schedule listing holds memos this process cannot decode (other deployments): left alone',
        );
      const now = deps.clock?.() ?? (await deps.schedules.databaseNow());

      const wanted = rows.flatMap((row) =>
        cronTriggersOf(row.definition).map(({ trigger, triggerIndex }) => {
          const scheduleId = temporalScheduleId(row.id, triggerIndex);
          return { row, trigger, triggerIndex, scheduleId, state: stateById.get(scheduleId) };
        }),
      );
      const wantedIds = new Set(wanted.map((entry) => entry.scheduleId));
      const outcomes: Array<SyncOutcome | undefined> = new Array<SyncOutcome | undefined>(wanted.length);
      // 1. Already in step? Only reads: the snapshot of the state, and the listing or a description.
      await forEachConcurrently(
        wanted,
        compareWith === 'listing' ? 1 : DESCRIBE_CONCURRENCY,
        async ({ row, trigger, triggerIndex, scheduleId, state }, index) => {
          if (!stateInStep(state, row.enabled, trigger, now)) return;
          const cause = pauseCauseOf(row, state);
          const desired = desiredMemo.get(
            scheduleId,
            `${row.version}\u0000${row.name}\u0000${JSON.stringify(trigger)}\u0000${JSON.stringify(cause)}`,
            () => desiredSchedule({ row, trigger, triggerIndex, taskQueue: deps.taskQueue, cause }),
          );
          if (compareWith === 'listing') {
            if (listedAsDesired(listing.get(scheduleId), desired, deps.taskQueue)) outcomes[index] = 'unchanged';
            if (index % 500 === 499) await yieldToEventLoop();
            return;
          }
          try {
            if (
              compareDescription(await deps.client.schedule.getHandle(scheduleId).describe(), desired, row.version) !==
              'differs'
            )
              outcomes[index] = 'unchanged';
          } catch (error) {
            if (!isScheduleNotFound(error)) throw error;
          }
        },
      );
      // 2. The rest through the full path: the state under its lock (read afresh), then describe, create or update.
      desiredMemo.retainOnly(wantedIds);
      const rest = wanted.flatMap((entry, index) => (outcomes[index] === undefined ? [{ ...entry, index }] : []));
      await forEachConcurrently(rest, WRITE_CONCURRENCY, async ({ row, trigger, triggerIndex, index }) => {
        outcomes[index] = await syncTrigger(row, trigger, triggerIndex);
      });
      for (const [index, outcome] of outcomes.entries()) {
        if (outcome === undefined || outcome === 'unchanged') result.unchanged++;
        else result[outcome].push(wanted[index]!.scheduleId);
      }

      // 3. States no live cron trigger wants (checked again against Postgres now, the snapshot may be old).
      for (const state of states) {
        if (wantedIds.has(state.scheduleId) || (await stillWanted(state.activityId, state.triggerIndex))) continue;
        if (await retire(state.activityId, state.triggerIndex)) result.deleted.push(state.scheduleId);
      }
      // 4. Schedules of this task queue in Temporal that nothing wants.
      for (const summary of listing.values()) {
        const memo = summary.memo as
          { managedBy?: unknown; taskQueue?: unknown; activityId?: unknown; triggerIndex?: unknown } | undefined;
        if (memo?.managedBy !== MANAGED_BY || memo.taskQueue !== deps.taskQueue || wantedIds.has(summary.scheduleId))
          continue;
        if (
          typeof memo.activityId === 'string' &&
          typeof memo.triggerIndex === 'number' &&
          (await stillWanted(memo.activityId, memo.triggerIndex))
        )
          continue;
        if (result.deleted.includes(summary.scheduleId)) continue;
        if (await deleteTemporalSchedule(summary.scheduleId)) result.deleted.push(summary.scheduleId);
      }
      return result;
    },

    /** Removes the schedule and state of one trigger that no longer exists. */
    retire,

    stillWanted,
  };
}

export type ScheduleSync = ReturnType<typeof createScheduleSync>;
