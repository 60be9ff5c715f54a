/**
 * Held events (docs/recovery.md, "Held events"; ADR 0071): the events an
 * activity disabled with `when_disabled.action: hold` matched, listed,
 * released or discarded per activity. A release makes each held route
 * `pending` and hands its event to the event path's own dispatch (the
 * dispatcher's `redispatch`: run records checked, pacing and debounce
 * decided, every start through `deliverPending` under the event's own
 * `activity-{activity_id}:{event_id}`), one event after the other in
 * arrival order; it never starts a run itself.
 */
import {
  ConflictError,
  HOLD_LIMITS,
  NotFoundError,
  type EventEnvelope,
  type HeldDiscardResponse,
  type HeldEvent,
  type HeldEventPage,
  type HeldReleaseResponse,
  type Logger,
} from '@activity-core/contracts';
import {
  decodeCursor,
  encodeCursor,
  type DefinitionRow,
  type DefinitionsRepository,
  type EventsRepository,
  type HeldEventRow,
  type HeldEventsRepository,
} from '@activity-core/db';
import type { EventIngest } from '@activity-core/router';
import { keysetPage } from './pagination';

/** How long a release keeps the dispatcher off an event it reopened (it dispatches the event itself first). */
const RELEASE_LEASE_MS = 30_000;
/** How long one release request carries on before it answers with what is left (the HTTP request timeout is 30 s). */
const RELEASE_BUDGET_MS = 10_000;

export interface HeldEventsDeps {
  held: HeldEventsRepository;
  events: Pick<EventsRepository, 'get'>;
  definitions: Pick<DefinitionsRepository, 'get' | 'historyHead'>;
  ingest: Pick<EventIngest, 'dispatch'>;
  logger: Logger;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

function toHeldEvent(row: HeldEventRow): HeldEvent {
  return {
    event_id: row.eventId,
    event_type: row.eventType,
    source: row.source,
    received_at: row.receivedAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    workflow_id: row.workflowId,
    detail: row.detail,
  };
}

/** The ids asked for that this request did not find held, in the order asked. */
export function notHeld(asked: readonly string[] | undefined, done: ReadonlySet<string>): string[] {
  if (asked === undefined) return [];
  return [...new Set(asked)].filter((id) => !done.has(id));
}

export function createHeldEventsService(deps: HeldEventsDeps) {
  const now = deps.now ?? Date.now;

  /** The activity, deleted ones included: 404 when no activity ever had this id. */
  async function requireHead(activityId: string) {
    const head = await deps.definitions.historyHead(activityId);
    if (head === undefined) throw new NotFoundError('activity', activityId);
    return head;
  }

  /** The live activity a release runs on: 409 when it was deleted or is still disabled. */
  async function releasable(activityId: string): Promise<DefinitionRow> {
    const head = await requireHead(activityId);
    const row = head.deletedAt === null ? await deps.definitions.get(activityId) : undefined;
    if (row === undefined)
      throw new ConflictError(
        `activity ${activityId} was deleted: its held events cannot be released (discard them, or let them expire)`,
      );
    if (!row.enabled)
      throw new ConflictError(
        `activity ${activityId} is disabled: enable it first (POST /v1/activities/${activityId}/enable?release_held=true enables and releases)`,
      );
    return row;
  }

  /**
   * Releases the held events of a live, enabled activity, oldest first: all
   * of them (as many as fit in one request: at most HOLD_LIMITS.maxPerRequest
   * and RELEASE_BUDGET_MS) or those of `eventIds`.
   */
  async function releaseOn(
    row: DefinitionRow,
    actor: string,
    eventIds: readonly string[] | undefined,
  ): Promise<HeldReleaseResponse> {
    const answer: HeldReleaseResponse = {
      activity_id: row.id,
      released: 0,
      started: 0,
      duplicate: 0,
      pending: 0,
      other: {},
      remaining: 0,
      not_held: [],
    };
    const ids = await deps.held.next(row.id, HOLD_LIMITS.maxPerRequest, eventIds);
    const deadline = now() + RELEASE_BUDGET_MS;
    const note = `released by ${actor} at ${new Date(now()).toISOString()}`;
    for (const eventId of ids) {
      if (now() > deadline) break;
      const outcome = await deps.held.release(
        eventId,
        row.id,
        { version: row.version, name: row.name },
        note,
        RELEASE_LEASE_MS,
      );
      if (outcome === 'not_held') continue;
      answer.released++;
      if (outcome === 'duplicate') {
        answer.duplicate++;
        continue;
      }
      const found = await deps.events.get(eventId);
      if (found === undefined) {
        answer.pending++;
        continue;
      }
      // The dispatcher's own path: never throws; a route Temporal did not take stays pending for the dispatcher.
      const outcomes = await deps.ingest.dispatch(
        found.event.payload as EventEnvelope,
        found.routes,
        found.event.routingAttempts + 1,
        found.event.hops,
      );
      const status = outcomes.get(row.id);
      if (status === 'started') answer.started++;
      else if (status === 'duplicate') answer.duplicate++;
      else if (status === undefined || status === 'pending') answer.pending++;
      else answer.other[status] = (answer.other[status] ?? 0) + 1;
    }
    answer.remaining = await deps.held.count(row.id);
    // Asked for, but not held by this activity when the release began (one a racing discard took is simply not released).
    answer.not_held = notHeld(eventIds, new Set(ids));
    deps.logger.info(
      { activityId: row.id, released: answer.released, remaining: answer.remaining, by: actor },
      'held events released',
    );
    return answer;
  }

  return {
    async list(activityId: string, query: { limit: number; cursor?: string }): Promise<HeldEventPage> {
      await requireHead(activityId);
      const page = await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        decode: decodeCursor,
        encode: (last: HeldEventRow) => encodeCursor({ createdAt: last.createdAt, id: last.eventId }),
        fetch: ({ limit, cursor }) => deps.held.list(activityId, { limit, ...(cursor ? { cursor } : {}) }),
        toItem: toHeldEvent,
      });
      return { ...page, total: await deps.held.count(activityId) };
    },

    async release(activityId: string, actor: string, eventIds?: readonly string[]): Promise<HeldReleaseResponse> {
      return await releaseOn(await releasable(activityId), actor, eventIds);
    },

    /** For `enable?release_held=true`: the activity just enabled (`row`), its held events released. */
    async releaseEnabled(row: DefinitionRow, actor: string): Promise<HeldReleaseResponse> {
      return await releaseOn(row, actor, undefined);
    },

    async count(activityId: string): Promise<number> {
      return await deps.held.count(activityId);
    },

    async discard(activityId: string, actor: string, eventIds?: readonly string[]): Promise<HeldDiscardResponse> {
      await requireHead(activityId);
      const discarded = await deps.held.discard(
        activityId,
        `discarded by ${actor} at ${new Date(now()).toISOString()}`,
        eventIds,
      );
      deps.logger.info({ activityId, discarded: discarded.length, by: actor }, 'held events discarded');
      return {
        activity_id: activityId,
        discarded: discarded.length,
        remaining: await deps.held.count(activityId),
        not_held: notHeld(eventIds, new Set(discarded)),
      };
    },
  };
}

export type HeldEventsService = ReturnType<typeof createHeldEventsService>;
