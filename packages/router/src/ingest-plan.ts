/**
 * The event path's decisions, pure: which routes an event gets, whether it is
 * stored routed at once, what the caller is answered, and when an event whose
 * routing is not finished is retried. No I/O; the parts around them (accept,
 * dispatch, settle) carry them out.
 */
import {
  eventRunWorkflowId,
  HOLD_LIMITS,
  parseDurationMs,
  runIdFor,
  type EventAcceptedWithRoutes,
  type EventEnvelope,
  type EventFilteredResult,
  type EventIdOrigin,
  type EventRunResult,
  type RouteOutcome,
} from '@activity-core/contracts';
import type { EventRouteRow, NewRoute } from '@activity-core/db';
import type { DefinitionIndex, IndexableDefinition } from './definition-index';
import type { PendingWorkFailure } from './gated-delivery';
import { decideForActivity } from './matching';

/**
 * A disabled activity's hold of an event its trigger lets through
 * (docs/recovery.md, "Held events"): until when, and the route's detail.
 * Undefined when the definition does not hold (`when_disabled` absent or
 * `drop`): the event is not routed to it at all.
 */
export function holdOf(
  definition: Pick<IndexableDefinition, 'enabled' | 'definition'>,
  now: Date,
): { expiresAt: Date; detail: string } | undefined {
  if (definition.enabled !== false) return undefined;
  const when = definition.definition.when_disabled;
  if (when?.action !== 'hold') return undefined;
  const expiresAt = new Date(now.getTime() + parseDurationMs(when.ttl ?? HOLD_LIMITS.defaultTtl));
  return { expiresAt, detail: `held: activity disabled; expires ${expiresAt.toISOString()}` };
}

/**
 * The routes an event gets from the definitions in `index`, and the
 * definition each pending route names by activity id (so its run is started
 * without reading the definition again). A disabled definition in the index
 * holds its events: an event its trigger lets through is routed `held`
 * (until `now` + its ttl); one its filter stops is not routed to it.
 */
export function matchRoutes<R extends IndexableDefinition>(
  index: DefinitionIndex<R>,
  envelope: EventEnvelope,
  now: Date = new Date(),
): { routes: NewRoute[]; snapshots: Map<string, R> } {
  const routes: NewRoute[] = [];
  const snapshots = new Map<string, R>();
  for (const definition of index.candidates(envelope.event_type)) {
    const decision = decideForActivity(definition.triggers, envelope);
    if (decision === undefined) continue;
    const workflowId = eventRunWorkflowId(definition.id, envelope.event_id);
    if (definition.row.enabled === false) {
      const hold = decision.outcome === 'pending' ? holdOf(definition.row, now) : undefined;
      if (hold === undefined) continue;
      routes.push({
        activityId: definition.id,
        activityVersion: definition.version,
        activityName: definition.name,
        workflowId,
        runId: runIdFor(workflowId),
        outcome: 'held',
        detail: hold.detail,
        expiresAt: hold.expiresAt,
      });
      continue;
    }
    routes.push({
      activityId: definition.id,
      activityVersion: definition.version,
      activityName: definition.name,
      // For filtered routes: the run this event would have had, for the record.
      workflowId,
      runId: runIdFor(workflowId),
      outcome: decision.outcome,
      ...(decision.outcome === 'pending' ? {} : { detail: decision.detail }),
    });
    if (decision.outcome === 'pending') snapshots.set(definition.id, definition.row);
  }
  return { routes, snapshots };
}

/**
 * Whether the accept stores the event routed at once: when no route needs
 * Temporal and nothing else (a trigger's cancel_on naming its type) holds it
 * pending for the dispatcher.
 */
export function storedRoutedAtAccept(routes: readonly Pick<NewRoute, 'outcome'>[], holdForRouting: boolean): boolean {
  return !holdForRouting && routes.every((route) => route.outcome !== 'pending');
}

const isRunRoute = (route: EventRouteRow): boolean =>
  route.outcome === 'pending' ||
  route.outcome === 'started' ||
  route.outcome === 'duplicate' ||
  route.outcome === 'coalescing' ||
  route.outcome === 'dead_letter';

function filteredResults(routes: readonly EventRouteRow[]): EventFilteredResult[] {
  return routes
    .filter((route) => route.outcome === 'filtered' || route.outcome === 'filter_error')
    .map((route) => ({
      activity_id: route.activityId,
      activity_name: route.activityName,
      status: route.outcome as EventFilteredResult['status'],
      detail: route.detail ?? '',
    }));
}

/** The answer to the caller: the event's runs with their status, and the activities whose filters left it out. */
export function ingestAnswer(
  envelope: EventEnvelope,
  idOrigin: EventIdOrigin,
  status: 'accepted' | 'duplicate',
  routes: readonly EventRouteRow[],
  outcomeOf: (route: EventRouteRow) => EventRunResult['status'],
): EventAcceptedWithRoutes {
  return {
    event_id: envelope.event_id,
    event_id_assigned: idOrigin === 'assigned',
    status,
    runs: routes.filter(isRunRoute).map((route) => ({
      activity_id: route.activityId,
      activity_name: route.activityName,
      workflow_id: route.workflowId,
      run_id: route.runId,
      status: outcomeOf(route),
    })),
    filtered: filteredResults(routes),
  };
}

/** A run's status in the answer to a new event: what Temporal said, or pending when it has not said yet. */
export function runStatusOf(outcome: RouteOutcome | undefined): EventRunResult['status'] {
  return outcome === 'started' || outcome === 'duplicate' || outcome === 'coalescing' || outcome === 'dead_letter'
    ? outcome
    : 'pending';
}

/**
 * Backoff for routing retries of one event that Temporal refused (as opposed
 * to Temporal being unreachable, which the gate handles for all events at
 * once): 1 s, 2 s, 4 s ... capped at 60 s.
 */
export function routingBackoffMs(attempt: number): number {
  return Math.min(60_000, 1_000 * 2 ** Math.max(0, attempt - 1));
}

/** Shortest wait before a deferred event is retried, so a flapping gate cannot spin the dispatcher. */
export const MIN_DEFERRED_RETRY_MS = 200;

/**
 * One failure from two steps of the same attempt: the first one's message,
 * unreachable only when both were (the gate's retry window applies only when
 * nothing but Temporal's silence held the event back).
 */
export function combineFailures(
  first: PendingWorkFailure | undefined,
  second: PendingWorkFailure | undefined,
): PendingWorkFailure | undefined {
  if (second === undefined) return first;
  if (first === undefined) return second;
  return { message: first.message, unreachable: first.unreachable && second.unreachable };
}

/**
 * When an event whose routing is not finished is tried again: soon after the
 * gate's next probe when Temporal was unreachable, with per-event backoff
 * when it refused. Undefined when nothing failed (the event is routed).
 */
export function retryPlan(
  failure: PendingWorkFailure | undefined,
  attempt: number,
  gateRetryInMs: () => number,
): { message: string; retryInMs: number } | undefined {
  if (failure === undefined) return undefined;
  return {
    message: failure.message,
    retryInMs: failure.unreachable ? Math.max(MIN_DEFERRED_RETRY_MS, gateRetryInMs()) : routingBackoffMs(attempt),
  };
}

/** The routing retry budget: past either bound, a route whose start keeps failing with an answer is a dead letter. */
export interface RoutingBudget {
  maxAttempts: number;
  maxAgeMs: number;
}

/**
 * Whether a route whose start failed in this attempt has spent the routing
 * retry budget: the failure was an answer (Temporal refused, our store
 * failed), not Temporal's silence — an outage never makes dead letters — and
 * this was at least the `maxAttempts`-th attempt or the route has been
 * pending `maxAgeMs` since it was opened. Undefined when it has not: the
 * route stays pending. Otherwise the dead letter's detail.
 */
export function budgetExhausted(
  budget: RoutingBudget | undefined,
  failure: PendingWorkFailure | undefined,
  attempt: number,
  pendingSince: Date,
  now: Date,
): string | undefined {
  if (budget === undefined || failure === undefined || failure.unreachable) return undefined;
  const ageMs = now.getTime() - pendingSince.getTime();
  if (attempt < budget.maxAttempts && ageMs < budget.maxAgeMs) return undefined;
  const spent =
    attempt >= budget.maxAttempts
      ? `${attempt} attempts (ROUTING_RETRY_MAX_ATTEMPTS=${budget.maxAttempts})`
      : `${Math.round(ageMs / 1000)} s pending (ROUTING_RETRY_MAX_AGE_SECONDS=${budget.maxAgeMs / 1000})`;
  return `routing retry budget spent after ${spent}; last failure: ${failure.message}`;
}
