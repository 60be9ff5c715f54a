/**
 * Where fire times get decided: the tick activity a Temporal Schedule's
 * `ScheduleTickWorkflow` calls, and the workers' sweep that decides what
 * Temporal never delivered. The decisions themselves are the fire processor's
 * (`fire-processor.ts`).
 */
import { toScheduledFor, type Logger } from '@activity-core/contracts';
import type { SchedulesRepository } from '@activity-core/db';
import type { ProcessScheduleTickInput, ProcessScheduleTickResult } from '@activity-core/temporal/client';
import { forEachConcurrently } from './bounded-parallel';
import type { FireProcessor } from './fire-processor';
import type { ScheduleSync } from './schedule-sync';
import { SweepMemo, yieldToEventLoop } from './sweep-memo';
import { firstFireAfter, needsProcessing } from './sweep-plan';

/** Triggers processed at once by the sweep; each holds one Postgres connection for its locked transaction. */
const SWEEP_CONCURRENCY = 4;

export function createScheduleTicks(deps: {
  schedules: Pick<
    SchedulesRepository,
    'listStates' | 'listLiveDefinitions' | 'listTriggersWithPendingFires' | 'databaseNow'
  >;
  logger: Logger;
  processor: FireProcessor;
  sync: Pick<ScheduleSync, 'retire' | 'stillWanted'>;
  /** Overrides the database clock (tests), as the fire processor's does. */
  clock?: () => Date;
}) {
  /** Next fire time after each trigger's processed_through, remembered between sweeps (it moves only when the trigger fires). */
  const nextFires = new SweepMemo<number | null>();

  return {
    /** The tick activity: decide and start what is due; an orphaned tick removes its schedule. */
    async processTick(input: ProcessScheduleTickInput): Promise<ProcessScheduleTickResult> {
      const result = await deps.processor.processDue({
        activityId: input.activityId,
        triggerIndex: input.triggerIndex,
        // The payload's `nominalTime` is Temporal's own `…Z` form (see ADR 0033).
        ...(input.nominalTime === undefined ? {} : { tickScheduledFor: toScheduledFor(input.nominalTime) }),
        origin: input.tickWorkflowId,
      });
      if (result.status === 'orphaned' && !(await deps.sync.stillWanted(input.activityId, input.triggerIndex))) {
        deps.logger.warn(
          { activityId: input.activityId, triggerIndex: input.triggerIndex },
          'tick for a trigger that no longer exists; removing its schedule',
        );
        await deps.sync.retire(input.activityId, input.triggerIndex);
      }
      return result;
    },

    /**
     * Decides what is due for every running (enabled, not paused) trigger.
     * The worker calls it at start-up and periodically, so fire times Temporal
     * never delivered (the server was down longer than the catch-up window)
     * still get their misfire decision without waiting for the next fire.
     *
     * Reads every state, definition and pending start in bulk and processes
     * only the triggers with something to decide or start (see
     * `needsProcessing`); for the others processing would decide nothing.
     * Returns how many triggers it processed.
     */
    async processAllDue(): Promise<number> {
      const states = await deps.schedules.listStates();
      const rows = new Map((await deps.schedules.listLiveDefinitions()).map((row) => [row.id, row]));
      const pending = new Set(
        (await deps.schedules.listTriggersWithPendingFires()).map((key) => `${key.activityId}/${key.triggerIndex}`),
      );
      const now = deps.clock?.() ?? (await deps.schedules.databaseNow());
      const due: typeof states = [];
      for (const [index, state] of states.entries()) {
        const nextFireAfter = (trigger: { cron: string; timezone: string }, from: Date) =>
          nextFires.get(state.scheduleId, `${trigger.cron}\u0000${trigger.timezone}\u0000${from.getTime()}`, () =>
            firstFireAfter(trigger, from),
          );
        const hasPending = pending.has(`${state.activityId}/${state.triggerIndex}`);
        if (needsProcessing({ state, row: rows.get(state.activityId), hasPending, now, nextFireAfter }))
          due.push(state);
        if (index % 500 === 499) await yieldToEventLoop();
      }
      nextFires.retainOnly(new Set(states.map((state) => state.scheduleId)));
      let processed = 0;
      await forEachConcurrently(due, SWEEP_CONCURRENCY, async (state) => {
        const result = await deps.processor.processDue({
          activityId: state.activityId,
          triggerIndex: state.triggerIndex,
          origin: 'sweep',
        });
        if (result.status === 'processed') processed++;
      });
      return processed;
    },
  };
}
