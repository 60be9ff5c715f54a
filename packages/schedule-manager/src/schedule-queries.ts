/**
 * The read side: fetches the rows (and Temporal's description of each
 * schedule) that the pure views in `schedule-views.ts` turn into answers.
 * Changes nothing.
 */
import {
  formatScheduledFor,
  NotFoundError,
  temporalScheduleId,
  type ActivitySchedules,
  type FireExplanation,
  type FireRecord,
  type ScheduleView,
} from '@activity-core/contracts';
import type { DefinitionRow } from '@activity-core/db';
import { isScheduleNotFound, requireActivity, type ScheduleManagerDeps } from './schedule-deps';
import { cronTriggersOf } from './schedule-options';
import { explainFires, explainUnrecordedFire, scheduleView, temporalView, toFireRecord } from './schedule-views';

const DEFAULT_TEMPORAL_UI_URL = 'http://127.0.0.1:8233';

export function createScheduleQueries(deps: ScheduleManagerDeps) {
  const clock = deps.clock ?? (() => new Date());
  const temporalUiUrl = deps.temporalUiUrl ?? DEFAULT_TEMPORAL_UI_URL;

  /** Temporal's view of one schedule; null when it is missing or Temporal did not answer (logged). */
  async function describeTemporal(scheduleId: string): Promise<ScheduleView['temporal']> {
    try {
      return temporalView(await deps.client.schedule.getHandle(scheduleId).describe());
    } catch (error) {
      if (!isScheduleNotFound(error)) deps.logger.warn({ err: error, scheduleId }, 'could not describe schedule');
      return null;
    }
  }

  /** The schedules of one live activity. */
  async function viewsOf(row: DefinitionRow): Promise<ActivitySchedules> {
    const states = new Map((await deps.schedules.listStates(row.id)).map((state) => [state.triggerIndex, state]));
    const now = clock();
    const schedules: ScheduleView[] = [];
    for (const { trigger, triggerIndex } of cronTriggersOf(row.definition)) {
      const temporal = await describeTemporal(temporalScheduleId(row.id, triggerIndex));
      schedules.push(
        scheduleView({
          activity: row,
          trigger,
          triggerIndex,
          state: states.get(triggerIndex),
          temporal,
          now,
          temporalUiUrl,
          namespace: deps.namespace,
        }),
      );
    }
    return { activity_id: row.id, schedules };
  }

  return {
    viewsOf,

    async describe(activityId: string): Promise<ActivitySchedules> {
      return await viewsOf(await requireActivity(deps.definitions, activityId));
    },

    /** Fire decisions of an activity, newest first. */
    async fires(
      activityId: string,
      query: { from?: Date; to?: Date; before?: { scheduledFor: Date; triggerIndex: number }; limit: number },
    ): Promise<FireRecord[]> {
      const rows = await deps.schedules.listFires({ activityId, ...query });
      // Deleted activities keep their history; only an id that never had any is unknown.
      if (rows.length === 0 && (await deps.definitions.get(activityId)) === undefined)
        throw new NotFoundError('activity', activityId);
      return rows.map(toFireRecord);
    },

    /** "Why did / didn't this nominal time run?" */
    async explain(activityId: string, scheduledFor: Date): Promise<FireExplanation> {
      const rows = await deps.schedules.findFiresAt(activityId, scheduledFor);
      const answer = { activity_id: activityId, scheduled_for: formatScheduledFor(scheduledFor) };
      if (rows.length > 0) return { ...answer, explanation: explainFires(rows), fires: rows.map(toFireRecord) };
      const row = await requireActivity(deps.definitions, activityId);
      const states = await deps.schedules.listStates(row.id);
      return {
        ...answer,
        explanation: explainUnrecordedFire({ activity: row, states, scheduledFor, now: clock() }),
        fires: [],
      };
    },
  };
}

export type ScheduleQueries = ReturnType<typeof createScheduleQueries>;
