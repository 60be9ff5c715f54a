import { DomainError, type EventEnvelope, type RunContext } from '@activity-core/contracts';
import { renderValue, TemplateError } from './templating';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';

/** What `emit_event` hands the event ingress; the router decides which runs follow. */
export type EmitEvent = (envelope: EventEnvelope) => Promise<{ status: string; runs: Array<{ workflow_id: string; status: string }> }>;

/**
 * Activities the task layer needs besides the task handlers themselves.
 */
export function createTaskControlActivities(deps: { client: Client; emitEvent: EmitEvent }) {
  return {
    /**
     * Waits for a task workflow this run did not start in its current
     * execution (a reset or retried parent finds its child's id taken: that
     * task is already done or in flight, never to be started twice).
     */
    async awaitTaskWorkflow(input: { workflowId: string }): Promise<{ status: 'succeeded' | 'failed'; result?: unknown; error?: { message: string } }> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), 5_000);
      try {
        const result: unknown = await deps.client.workflow.getHandle(input.workflowId).result();
        return { status: 'succeeded', result };
      } catch (error) {
        if (error instanceof WorkflowFailedError) {
          return { status: 'failed', error: { message: error.cause?.message ?? error.message } };
        }
        throw error;
      } finally {
        clearInterval(beat);
      }
    },

    /** `emit_event`: the envelope's id is derived from run and index, so a retry emits the same event. */
    async emitEvent(input: { envelope: EventEnvelope; context: RunContext }): Promise<{ event_id: string; status: string; runs: Array<{ workflow_id: string; status: string }> }> {
      let data: Record<string, unknown>;
      try {
        data = renderValue(input.envelope.data, input.context) as Record<string, unknown>;
      } catch (error) {
        if (error instanceof TemplateError) throw ApplicationFailure.nonRetryable(error.message, 'template_error');
        throw error;
      }
      try {
        const outcome = await deps.emitEvent({ ...input.envelope, data });
        return { event_id: input.envelope.event_id, ...outcome };
      } catch (error) {
        // Postgres down: retry (the activity's policy has no attempt limit). Anything else the
        // ingress refuses will be refused again, so fail the task with the reason.
        if (error instanceof DomainError && error.code !== 'unavailable') throw ApplicationFailure.nonRetryable(error.message, error.code);
        throw error;
      }
    },
  };
}
