import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/** Temporal's answer to a cancellation request: taken, or the run had already closed (nothing to cancel). */
export type CancelOutcome = 'cancel_requested' | 'already_closed';

/**
 * Requests cancellation of a run workflow by its id. Idempotent: asking twice
 * is one request as far as the run is concerned (the workflow sees one
 * cancellation), and a closed run answers `already_closed`. Unreachable
 * Temporal throws (see isTemporalUnreachable).
 */
export function createRunCanceller(deps: { client: Client }) {
  return {
    async cancel(workflowId: string, options: { deadline?: Date } = {}): Promise<CancelOutcome> {
      const request = () => deps.client.workflow.getHandle(workflowId).cancel();
      try {
        await (options.deadline === undefined ? request() : deps.client.withDeadline(options.deadline, request));
        return 'cancel_requested';
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return 'already_closed';
        throw error;
      }
    },
  };
}

export type RunCanceller = ReturnType<typeof createRunCanceller>;
