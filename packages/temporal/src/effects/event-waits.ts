import type { EventEnvelope } from '@activity-core/contracts';
import type { EventWaitsRepository, WaitState } from '@activity-core/db';
import { ApplicationFailure } from '@temporalio/activity';

/** What a `wait_for_event` task asks when it begins waiting. */
export interface RegisterEventWaitInput {
  /** The task workflow's id: one wait per task workflow. */
  waitId: string;
  runId: string;
  activityId: string;
  taskIndex: number;
  eventType: string;
  /** The only sources whose events may end the wait; absent: any source. */
  sources?: string[];
  match?: string;
  /** The run's trigger event, for `trigger.event` in the match; absent for runs not started by an event. */
  triggerEvent?: EventEnvelope;
  timeoutMs: number;
}

/** A wait as the task workflow sees it: still waiting, or how it ended (with the event when one matched). */
export type EventWaitAnswer =
  | { status: 'waiting' | 'timed_out' | 'cancelled' }
  | { status: 'matched'; event: EventEnvelope | null; eventId: string };

function answerOf(state: WaitState): EventWaitAnswer {
  if (state.status === 'matched')
    return {
      status: 'matched',
      eventId: state.matchedEventId ?? '',
      event: (state.matchedEvent as EventEnvelope) ?? null,
    };
  return { status: state.status };
}

/**
 * The two Postgres writes of a `wait_for_event` task (see
 * docs/wait-for-event.md). Both are idempotent, so Temporal may retry them
 * freely; Postgres holds the decision (an event matched the wait, or its
 * timeout or cancellation ended it first), and the task follows it.
 */
export function createEventWaitEffects(deps: { eventWaits?: Pick<EventWaitsRepository, 'register' | 'close'> }) {
  const repository = () => {
    if (deps.eventWaits === undefined)
      throw ApplicationFailure.nonRetryable('this worker has no event wait store', 'event_waits_unavailable');
    return deps.eventWaits;
  };
  return {
    /** Records the open wait (before the task waits, so every event accepted from now on is matched against it). */
    async registerEventWait(input: RegisterEventWaitInput): Promise<EventWaitAnswer> {
      return answerOf(
        await repository().register({
          waitId: input.waitId,
          runId: input.runId,
          activityId: input.activityId,
          taskIndex: input.taskIndex,
          eventType: input.eventType,
          ...(input.sources === undefined ? {} : { sources: input.sources }),
          ...(input.match === undefined ? {} : { match: input.match }),
          ...(input.triggerEvent === undefined ? {} : { triggerEvent: input.triggerEvent }),
          timeoutMs: input.timeoutMs,
        }),
      );
    },

    /** Ends a wait that is still open; a wait an event matched first answers `matched` with the event. */
    async closeEventWait(input: { waitId: string; status: 'timed_out' | 'cancelled' }): Promise<EventWaitAnswer> {
      return answerOf(await repository().close(input.waitId, input.status));
    },
  };
}
