import { DomainError, type EventEnvelope, type RunContext } from '@activity-core/contracts';
import { renderValue, TemplateError } from './templating';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';

/**
 * What `emit_event` hands the event ingress; the router decides which runs
 * follow. `origin` is what the ingress records besides the content: the
 * credential (`emit:<run id>`) and the event's hop count.
 */
export type EmitEvent = (
  envelope: EventEnvelope,
  origin: { credential: string; hops: number },
) => Promise<{ status: string; runs: Array<{ workflow_id: string; status: string }> }>;

/** Default for EMIT_MAX_HOPS: how many emit_event steps may follow one external event. */
export const DEFAULT_EMIT_MAX_HOPS = 8;

/** The failure type a task records when its emit would exceed the hop limit. */
export const EMIT_HOPS_EXCEEDED = 'emit_hops_exceeded';

/**
 * The hop count an event emitted by this run gets: one more than the event
 * that triggered the run (external events, cron and manual runs count 0;
 * runs started before hops were counted carry none and count 0 too).
 */
export function emittedHops(context: Pick<RunContext, 'run'>): number {
  return (context.run.event_hops ?? 0) + 1;
}

/**
 * Activities the task layer needs besides the task handlers themselves.
 */
export function createTaskControlActivities(deps: { client: Client; emitEvent: EmitEvent; emitMaxHops?: number }) {
  const maxHops = deps.emitMaxHops ?? DEFAULT_EMIT_MAX_HOPS;
  return {
    /**
     * Waits for a task workflow this run did not start in its current
     * execution (a reset or retried parent finds its child's id taken: that
     * task is already done or in flight, never to be started twice).
     */
    async awaitTaskWorkflow(input: {
      workflowId: string;
    }): Promise<{ status: 'succeeded' | 'failed'; result?: unknown; error?: { message: string } }> {
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
    async emitEvent(input: {
      envelope: EventEnvelope;
      context: RunContext;
    }): Promise<{ event_id: string; status: string; runs: Array<{ workflow_id: string; status: string }> }> {
      const hops = emittedHops(input.context);
      if (hops > maxHops) {
        // A chain of emits (an activity triggering itself, or a cycle of activities) ends here.
        // Retrying cannot change the count, so the task fails with the reason on its record.
        throw ApplicationFailure.nonRetryable(
          `emit_event refused: event ${input.envelope.event_id} would be ${hops} emit_event steps from an external event; ` +
            `EMIT_MAX_HOPS is ${maxHops} (is an activity triggering itself, or a cycle of activities triggering each other?)`,
          EMIT_HOPS_EXCEEDED,
        );
      }
      let data: Record<string, unknown>;
      try {
        data = renderValue(input.envelope.data, input.context) as Record<string, unknown>;
      } catch (error) {
        if (error instanceof TemplateError) throw ApplicationFailure.nonRetryable(error.message, 'template_error');
        throw error;
      }
      try {
        const outcome = await deps.emitEvent(
          { ...input.envelope, data },
          { credential: `emit:${input.context.run.run_id}`, hops },
        );
        return { event_id: input.envelope.event_id, ...outcome };
      } catch (error) {
        // Postgres down: retry (the activity's policy has no attempt limit). Anything else the
        // ingress refuses will be refused again, so fail the task with the reason.
        if (error instanceof DomainError && error.code !== 'unavailable')
          throw ApplicationFailure.nonRetryable(error.message, error.code);
        throw error;
      }
    },
  };
}
