/**
 * Where fire times get decided: the tick activity a Temporal Schedule's
 * `ScheduleTickWorkflow` calls, and the workers' sweep that decides what
 * Temporal never delivered. The decisions themselves are the fire processor's
 * (`fire-processor.ts`).
 */
import { toScheduledFor, type Logger } from '@activity-core/contracts';
import type { SchedulesRepository } from '@activity-core/db';
import type { ProcessScheduleTickInput, ProcessScheduleTickResult } from '@activity-core/temporal/client';
import type { FireProcessor } from './fire-processor';
import type { ScheduleSync } from './schedule-sync';

export function createScheduleTicks(deps: {
  schedules: Pick<SchedulesRepository, 'listStates'>;
  logger: Logger;
  processor: FireProcessor;
  sync: Pick<ScheduleSync, 'retire' | 'stillWanted'>;
}) {
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
        deps.logger.warn({ activityId: input.activityId, triggerIndex: input.triggerIndex }, 'tick for a trigger that no longer exists; removing its schedule');
        await deps.sync.retire(input.activityId, input.triggerIndex);
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
        const result = await deps.processor.processDue({ activityId: state.activityId, triggerIndex: state.triggerIndex, origin: 'sweep' });
        if (result.status === 'processed') processed++;
      }
      return processed;
    },
  };
}

export type ScheduleTicks = ReturnType<typeof createScheduleTicks>;
