/**
 * Dead letters (docs/recovery.md, "Dead letters"; ADR 0072): routes whose run
 * could not be started — `dead_letter` with a reason, and `filter_error` —
 * listed, retried and discarded. A retry plans the stored event again on
 * today's definitions and, when the activity still matches, opens the route
 * as `pending` under the event's own run id (`activity-{activity_id}:{event_id}`)
 * and hands it to the event path's own dispatch (run records, REJECT_DUPLICATE,
 * `deliverPending`), so a retry can never run anything twice; one that fails
 * again is a dead letter again, counted.
 */
import {
  MAX_DEAD_LETTERS_PER_REQUEST,
  NotFoundError,
  type DeadLetter,
  type DeadLetterDiscardResponse,
  type DeadLetterListQuery,
  type DeadLetterReason,
  type DeadLetterRetried,
  type DeadLetterRetryResponse,
  type DeadLetterSelection,
  type EventEnvelope,
  type Logger,
  type RouteOutcome,
} from '@activity-core/contracts';
import type {
  DeadLetterCursor,
  DeadLetterFilter,
  DeadLetterReopen,
  DeadLetterRow,
  DeadLettersRepository,
  DefinitionsRepository,
  EventRouteRow,
  EventsRepository,
} from '@activity-core/db';
import type { EventIngest } from '@activity-core/router';
import { keysetPage } from './pagination';

/** How long a retry keeps the dispatcher off the event it reopened while it dispatches it inline. */
const INLINE_LEASE_MS = 30_000;

export interface DeadLetterDeps {
  deadLetters: DeadLettersRepository;
  events: Pick<EventsRepository, 'get'>;
  ingest: Pick<EventIngest, 'plan' | 'dispatch'>;
  definitions: Pick<DefinitionsRepository, 'get'>;
  logger: Logger;
}

function encodeCursor(row: DeadLetterRow): string {
  return Buffer.from(JSON.stringify([row.deadLetteredAt.toISOString(), row.eventId, row.activityId])).toString(
    'base64url',
  );
}

function decodeCursor(value: string): DeadLetterCursor | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
    const [at, eventId, activityId] = parsed as unknown[];
    if (typeof at !== 'string' || typeof eventId !== 'string' || typeof activityId !== 'string') return undefined;
    if (!/^[0-9a-f-]{36}$/.test(activityId)) return undefined;
    const date = new Date(at);
    return Number.isNaN(date.getTime()) ? undefined : { at: date, eventId, activityId };
  } catch {
    return undefined;
  }
}

function toItem(row: DeadLetterRow): DeadLetter {
  return {
    event_id: row.eventId,
    activity_id: row.activityId,
    activity_name: row.activityName,
    activity_version: row.activityVersion,
    event_type: row.eventType,
    workflow_id: row.workflowId,
    run_id: row.runId,
    reason: row.reason,
    detail: row.detail,
    attempts: row.attempts,
    received_at: row.receivedAt.toISOString(),
    dead_lettered_at: row.deadLetteredAt.toISOString(),
  };
}

function retriedOf(route: EventRouteRow): DeadLetterRetried {
  return {
    event_id: route.eventId,
    activity_id: route.activityId,
    activity_name: route.activityName,
    workflow_id: route.workflowId,
    outcome: route.outcome as RouteOutcome,
    reason:
      route.outcome === 'dead_letter'
        ? (route.reasonCode as DeadLetterReason)
        : route.outcome === 'filter_error'
          ? 'filter_error'
          : null,
    detail: route.detail,
  };
}

export function createDeadLetterService(deps: DeadLetterDeps) {
  /** The dead letters a request acts on (oldest first, one more than the cap, so `more` is known). */
  async function selected(
    selection: DeadLetterSelection,
  ): Promise<{ keys: { eventId: string; activityId: string }[]; more: boolean }> {
    if (selection.event_id !== undefined && selection.activity_id !== undefined) {
      const found = await deps.events.get(selection.event_id);
      if (found === undefined) throw new NotFoundError('event', selection.event_id);
      if (!found.routes.some((route) => route.activityId === selection.activity_id))
        throw new NotFoundError('route of event', `${selection.event_id} for activity ${selection.activity_id}`);
      return { keys: [{ eventId: selection.event_id, activityId: selection.activity_id }], more: false };
    }
    const filter: DeadLetterFilter = {
      ...(selection.filter?.activity_id === undefined ? {} : { activityId: selection.filter.activity_id }),
      ...(selection.filter?.reason === undefined ? {} : { reason: selection.filter.reason }),
    };
    const rows = await deps.deadLetters.list(filter, { limit: MAX_DEAD_LETTERS_PER_REQUEST + 1 });
    return {
      keys: rows
        .slice(0, MAX_DEAD_LETTERS_PER_REQUEST)
        .map((row) => ({ eventId: row.eventId, activityId: row.activityId })),
      more: rows.length > MAX_DEAD_LETTERS_PER_REQUEST,
    };
  }

  /** Today's decision for one route of a stored event. */
  async function decide(envelope: EventEnvelope, activityId: string): Promise<DeadLetterReopen> {
    const planned = await deps.ingest.plan(envelope);
    const route = planned.routes.find((candidate) => candidate.activityId === activityId);
    if (route === undefined) {
      const live = await deps.definitions.get(activityId);
      return live === undefined
        ? { outcome: 'dead_letter', reason: 'definition_deleted', detail: 'the activity is deleted' }
        : {
            outcome: 'dead_letter',
            reason: 'not_matched',
            detail: `activity ${live.name} does not match the event today (${live.enabled ? 'its triggers changed' : 'it is disabled'})`,
          };
    }
    const outcome = route.outcome ?? 'pending';
    // A disabled activity that holds its events: the retry does not turn a dead letter into a hold (it has no ttl of
    // its own); it stays a dead letter until the activity is enabled and it is retried again.
    if (outcome === 'held')
      return {
        outcome: 'dead_letter',
        reason: 'not_matched',
        detail: `activity ${route.activityName} is disabled (it holds new events); enable it and retry`,
      };
    if (outcome !== 'pending')
      return {
        outcome,
        activityVersion: route.activityVersion,
        activityName: route.activityName,
        detail: route.detail ?? '',
      };
    return {
      outcome: 'pending',
      activityVersion: route.activityVersion,
      activityName: route.activityName,
      workflowId: route.workflowId,
      runId: route.runId,
      leaseMs: INLINE_LEASE_MS,
    };
  }

  /** Retries one route; answers the route as it is afterwards (unchanged when it was no open dead letter). */
  async function retryOne(eventId: string, activityId: string, actor: string): Promise<DeadLetterRetried | undefined> {
    const found = await deps.events.get(eventId);
    if (found === undefined) return undefined;
    const envelope = found.event.payload as EventEnvelope;
    const before = found.routes.find((route) => route.activityId === activityId);
    if (before === undefined) return undefined;
    if ((before.outcome === 'dead_letter' || before.outcome === 'filter_error') && before.discardedAt === null) {
      const decision = await decide(envelope, activityId);
      const note = `retried by ${actor} at ${new Date().toISOString()}`;
      const reopened = await deps.deadLetters.reopen(eventId, activityId, decision, note);
      if (reopened && decision.outcome === 'pending') {
        const after = await deps.events.get(eventId);
        // The event path's own dispatch: run records checked, the start through deliverPending, then settled.
        if (after?.routes.some((route) => route.outcome === 'pending') === true)
          await deps.ingest.dispatch(envelope, after.routes, 1, found.event.hops);
      }
      deps.logger.info({ eventId, activityId, decision: decision.outcome, reopened }, 'dead letter retried');
    }
    const now = await deps.events.get(eventId);
    const route = now?.routes.find((candidate) => candidate.activityId === activityId);
    return route === undefined ? undefined : retriedOf(route);
  }

  return {
    /** `GET /v1/dead-letters`: open dead letters, oldest first. */
    async list(query: DeadLetterListQuery) {
      const filter: DeadLetterFilter = {
        ...(query.activity_id === undefined ? {} : { activityId: query.activity_id }),
        ...(query.reason === undefined ? {} : { reason: query.reason }),
      };
      return await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        decode: decodeCursor,
        encode: encodeCursor,
        fetch: ({ limit, cursor }) => deps.deadLetters.list(filter, { limit, ...(cursor ? { cursor } : {}) }),
        toItem,
      });
    },

    /** `POST /v1/dead-letters/retry`: one, or up to MAX_DEAD_LETTERS_PER_REQUEST a filter selects, one after the other. */
    async retry(selection: DeadLetterSelection, actor: string): Promise<DeadLetterRetryResponse> {
      const { keys, more } = await selected(selection);
      const retried: DeadLetterRetried[] = [];
      for (const key of keys) {
        const answer = await retryOne(key.eventId, key.activityId, actor);
        if (answer !== undefined) retried.push(answer);
      }
      return { retried, more };
    },

    /** `POST /v1/dead-letters/discard`: recorded on each route (who, when); they are no longer listed or counted. */
    async discard(selection: DeadLetterSelection, actor: string): Promise<DeadLetterDiscardResponse> {
      const { keys, more } = await selected(selection);
      const discarded = await deps.deadLetters.discard(keys, actor);
      deps.logger.info({ discarded: discarded.length, actor }, 'dead letters discarded');
      return {
        discarded: discarded.map((row) => ({ event_id: row.eventId, activity_id: row.activityId, reason: row.reason })),
        more,
      };
    },
  };
}

export type DeadLetterService = ReturnType<typeof createDeadLetterService>;
