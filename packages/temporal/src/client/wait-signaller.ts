import type { EventEnvelope } from '@activity-core/contracts';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { EVENT_WAIT_MATCHED_SIGNAL } from '../names';

/** What a waiting task workflow receives when an event matched its wait. */
export interface EventWaitMatchedSignal {
  waitId: string;
  event: EventEnvelope;
}

/** Temporal's answer to a resume signal: taken, or the task workflow had already closed. */
export type WaitSignalOutcome = 'delivered' | 'already_closed';

/**
 * Resumes a waiting `wait_for_event` task workflow (its id is the wait id)
 * with the event that matched it. Idempotent as far as the task is
 * concerned: it takes the first signal and ignores any repeat (every signal
 * for one wait carries the same event). Unreachable Temporal throws (see
 * isTemporalUnreachable).
 */
export function createWaitSignaller(deps: { client: Client }) {
  return {
    async signal(waitId: string, event: EventEnvelope, options: { deadline?: Date } = {}): Promise<WaitSignalOutcome> {
      const payload: EventWaitMatchedSignal = { waitId, event };
      const request = () => deps.client.workflow.getHandle(waitId).signal(EVENT_WAIT_MATCHED_SIGNAL, payload);
      try {
        await (options.deadline === undefined ? request() : deps.client.withDeadline(options.deadline, request));
        return 'delivered';
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return 'already_closed';
        throw error;
      }
    },
  };
}

export type WaitSignaller = ReturnType<typeof createWaitSignaller>;
