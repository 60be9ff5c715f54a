/**
 * The event path: durable accept, then route. The event and the list of
 * activities it matched (filter decisions included) are committed in one
 * transaction before anything is started, so a 2xx always means "on disk",
 * and redeliveries see the first decision instead of making a new one.
 *
 * A facade over parts with one job each, sharing one context
 * (`ingest-deps.ts`):
 * - `event-accept.ts` stores and dedupes the event with its routes;
 * - `event-dispatch.ts` starts the runs of its pending routes, inline after
 *   the accept (`dispatchAccepted`) or as the dispatcher's retry
 *   (`redispatch`), every start through `deliverPending` (`gated-delivery.ts`);
 * - `event-settle.ts` records the attempt's outcome and the event's routing;
 * - the pure `ingest-plan.ts` decides routes, answers and retry times.
 */
import type { EventAcceptedWithRoutes, EventEnvelope, EventIdOrigin } from '@activity-core/contracts';
import { createEventAccept, type IngestOrigin } from './event-accept';
import { createEventDispatch } from './event-dispatch';
import { createEventSettle } from './event-settle';
import { createIngestContext, type EventIngestDeps } from './ingest-deps';
import { ingestAnswer, matchRoutes, runStatusOf } from './ingest-plan';
import { inSpan } from './tracing';

export { StoreUnreachableError, type IngestOrigin, type WebhookSourcesCheck } from './event-accept';
export type { EventIngestDeps } from './ingest-deps';
export { routingBackoffMs } from './ingest-plan';

export function createEventIngest(deps: EventIngestDeps) {
  const ctx = createIngestContext(deps);
  const accept = createEventAccept(ctx);
  const { dispatchAccepted, redispatch } = createEventDispatch(ctx, createEventSettle(ctx));

  /**
   * Accepts one event and starts its runs. Throws EventIdReusedError when the
   * id is taken by different content, UnavailableError when Postgres cannot
   * store it. `origin` is recorded with a new event: the credential that
   * delivered it and its hop count (emit_event steps from an external event,
   * default 0). A redelivery keeps what the first delivery recorded.
   */
  async function ingest(
    envelope: EventEnvelope,
    idOrigin: EventIdOrigin,
    origin: IngestOrigin,
  ): Promise<EventAcceptedWithRoutes> {
    const accepted = await accept(envelope, idOrigin, origin);
    // A redelivery starts nothing: every run it matched is a duplicate (docs/idempotency.md, layer 1),
    // even one the first delivery has not got Temporal to start yet.
    // A run whose start was refused for good is answered as what it is (docs/recovery.md, "Dead letters").
    if (accepted.kind === 'duplicate')
      return ingestAnswer(envelope, idOrigin, 'duplicate', accepted.routes, (route) =>
        route.outcome === 'dead_letter' ? 'dead_letter' : 'duplicate',
      );
    const outcomes = await dispatchAccepted(envelope, accepted, origin.hops ?? 0);
    // A route the rate limit dropped has no run to answer with (GET /v1/events/{id} records it).
    const routes = accepted.routes.filter((route) => outcomes.get(route.activityId) !== 'dropped');
    return ingestAnswer(envelope, idOrigin, 'accepted', routes, (route) => runStatusOf(outcomes.get(route.activityId)));
  }

  return {
    /** The dispatcher's retry of a pending event: starts what its routes still need, then settles it. */
    dispatch: redispatch,
    /** Shared knowledge of whether Temporal answers. */
    gate: ctx.gate,
    /**
     * The routes a stored event gets from today's enabled definitions (a
     * replay re-plans the stored envelope with this; nothing is stored).
     */
    plan: async (envelope: EventEnvelope) => matchRoutes(await ctx.definitionCache.current(), envelope),
    /** Traced: the span of one ingest (accept, then the workflow starts) under the caller's (the request's) span. */
    ingest: (
      envelope: EventEnvelope,
      idOrigin: EventIdOrigin,
      origin: IngestOrigin = {},
    ): Promise<EventAcceptedWithRoutes> =>
      inSpan(
        'event ingest',
        {
          'activity_core.event_id': envelope.event_id,
          'activity_core.event_type': envelope.event_type,
          'activity_core.event_source': envelope.source,
        },
        () => ingest(envelope, idOrigin, origin),
      ),
  };
}

export type EventIngest = ReturnType<typeof createEventIngest>;
