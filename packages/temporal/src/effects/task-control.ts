import { DomainError, formatCredentialLabel, type EventEnvelope, type RunContext } from '@activity-core/contracts';
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

/** The failure type a task records when its chain's root event has emitted EMIT_MAX_PER_ROOT events. */
export const EMIT_BUDGET_EXCEEDED = 'emit_budget_exceeded';

/** Source of the root of a chain that began with a cron or manual run (reserved: no sender may use it). */
const RUN_ROOT_SOURCE = 'activity-core:run';

/**
 * Counts an emitted event against its chain's root (`@activity-core/db`'s
 * emit budgets): granted, or refused because the root has emitted `limit`.
 */
export type EmitBudget = {
  limit: number;
  claim: (input: {
    eventId: string;
    trigger: { source: string; eventId: string };
    triggerEmitted: boolean;
    limit: number;
  }) => Promise<{ granted: boolean; root: { source: string; eventId: string }; emitted: number }>;
};

/**
 * The hop count an event emitted by this run gets: one more than the event
 * that triggered the run (external events, cron and manual runs count 0;
 * runs started before hops were counted carry none and count 0 too).
 */
export function emittedHops(context: Pick<RunContext, 'run'>): number {
  return (context.run.event_hops ?? 0) + 1;
}

/**
 * Effects the task layer needs besides the task handlers themselves.
 */
export function createTaskControlEffects(deps: {
  client: Client;
  emitEvent: EmitEvent;
  emitMaxHops?: number;
  emitBudget?: EmitBudget;
}) {
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
      if (deps.emitBudget !== undefined) {
        const { limit, claim } = deps.emitBudget;
        const event = input.context.event;
        // Before the ingest: an emit past the budget stores nothing. Keyed by the emitted event's id, so a
        // retried attempt of this task is granted again without being counted twice.
        const claimed = await claim({
          eventId: input.envelope.event_id,
          trigger:
            event === undefined
              ? { source: RUN_ROOT_SOURCE, eventId: input.context.run.run_id }
              : { source: event.source, eventId: event.event_id },
          triggerEmitted: event !== undefined && (input.context.run.event_hops ?? 0) > 0,
          limit,
        });
        if (!claimed.granted) {
          throw ApplicationFailure.nonRetryable(
            `emit_event refused: root event ${claimed.root.eventId} (source ${claimed.root.source}) has already emitted ` +
              `${claimed.emitted} events; EMIT_MAX_PER_ROOT is ${limit} (are activities fanning out into each other?)`,
            EMIT_BUDGET_EXCEEDED,
          );
        }
      }
      try {
        const outcome = await deps.emitEvent(
          { ...input.envelope, data },
          { credential: formatCredentialLabel({ kind: 'emit', runId: input.context.run.run_id }), hops },
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
