/**
 * Settle: finishes one dispatch attempt of an event. The event's other
 * Temporal work (cancel_on cancellations, wait_for_event signals) is done
 * first, then one write records every answer Temporal gave and marks the
 * event routed, or records the failure and when to retry (`retryPlan`).
 */
import type { EventEnvelope } from '@activity-core/contracts';
import type { DefinitionRow, RouteSettlement } from '@activity-core/db';
import type { DefinitionIndex } from './definition-index';
import type { PendingWorkFailure } from './gated-delivery';
import type { IngestContext } from './ingest-deps';
import { combineFailures, retryPlan } from './ingest-plan';

export interface SettleAttempt {
  /** Which attempt this was (1 for the inline dispatch): the backoff of a refused start grows with it. */
  attempt: number;
  /** A just-accepted event: cancel_on and wait_for_event skip their reads when nothing can be waiting. */
  quick: boolean;
  /** The definitions the event was routed on, or how to get the current ones. */
  definitions: DefinitionIndex<DefinitionRow> | (() => Promise<DefinitionIndex<DefinitionRow>>);
  /** The accept found a wait_for_event task waiting for this type. */
  waitsOpen: boolean;
}

export function createEventSettle(ctx: IngestContext) {
  const { deps, logger, gate } = ctx;
  const options = { timeoutMs: ctx.timeouts.timeoutMs, probeTimeoutMs: ctx.timeouts.probeTimeoutMs };

  /** Never throws: a record that is lost leaves the event pending, and the dispatcher settles it. */
  return async function settle(
    envelope: EventEnvelope,
    settled: RouteSettlement[],
    startFailure: PendingWorkFailure | undefined,
    attempt: SettleAttempt,
  ): Promise<void> {
    let failure = startFailure;
    // cancel_on: before the write below, which marks the event routed only if nothing failed.
    failure = combineFailures(
      failure,
      await deps.cancelOn?.process(envelope, attempt.definitions, gate, { quick: attempt.quick, ...options }),
    );
    // wait_for_event: likewise before the write; its matches keep the event pending until their tasks are signalled.
    failure = combineFailures(
      failure,
      await deps.eventWaits?.process(envelope, gate, {
        quick: attempt.quick,
        waitsOpen: attempt.waitsOpen,
        ...options,
      }),
    );
    // One write for the whole attempt: every answer Temporal gave, then the event routed (or the failure and
    // when to retry). If it is lost the routes stay pending, and the dispatcher's next pass finds the runs
    // already started (Temporal answers "already started": duplicate) and settles the event.
    const retry = retryPlan(failure, attempt.attempt, () => gate.retryInMs());
    await deps.events.settle(envelope.event_id, settled, retry).catch((error: unknown) => {
      logger.warn(
        { eventId: envelope.event_id, err: error },
        'could not record the routing outcome; the dispatcher will settle the event',
      );
    });
  };
}

export type EventSettle = ReturnType<typeof createEventSettle>;
