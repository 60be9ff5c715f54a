import type { IngestKeyScope } from '@activity-core/config';
import {
  assignedEventId,
  batchItemEventId,
  MAX_BATCH_IDEMPOTENCY_KEY,
  CloudEvent,
  DomainError,
  envelopeFromCloudEvent,
  EventEnvelope,
  EventEnvelopeInput,
  EventIdReusedError,
  ForbiddenError,
  formatCredentialLabel,
  InvalidInputError,
  isCloudEvent,
  NotFoundError,
  reservedEventIdReason,
  sourceScopedEventId,
  UnavailableError,
  type EventAcceptedResponse,
  type EventIdOrigin,
  type FieldIssue,
  type Logger,
  type EventWaitSignalState,
  type DeadLetterRouteReason,
  type RouteOutcome,
} from '@activity-core/contracts';
import {
  DatabaseUnreachableError,
  translatePgError,
  type CancellationsRepository,
  type EventWaitsRepository,
  type ReplaysRepository,
  type EventsRepository,
} from '@activity-core/db';
import { StoreUnreachableError, type EventIngest } from '@activity-core/router';
import type { z } from 'zod';
import type { RequestCredential } from '../plugins/auth';
import { formatPath } from '../plugins/problem';
import type { VersionedReservedSources, WebhookSourceCatalog } from './webhook-source-catalog';

/** The source emit_event tasks stamp on their events unless they name another. */
export const SERVICE_EVENT_SOURCE = 'activity-core';

/** Sources verified webhook deliveries get by default: `webhook:{name}`. */
const WEBHOOK_SOURCE_PREFIX = 'webhook:';

/**
 * Why a posted event may not carry this source, or undefined. Reserved are
 * the sources only a verified sender gets: every `webhook:*` source, the
 * service's own (`activity-core` and `activity-core:*`), and any custom
 * `event_source` a configured webhook source stamps (`webhookSources` maps
 * those to the webhook source's name). A trigger that names one of them can
 * then trust that the event was verified, or emitted by the service.
 */
export function reservedSourceReason(
  source: string,
  webhookSources: ReadonlyMap<string, string> = new Map(),
): string | undefined {
  if (source.startsWith(WEBHOOK_SOURCE_PREFIX)) {
    return `sources starting with "${WEBHOOK_SOURCE_PREFIX}" are reserved for verified webhook deliveries (POST /v1/webhooks/{source})`;
  }
  if (source === SERVICE_EVENT_SOURCE || source.startsWith(`${SERVICE_EVENT_SOURCE}:`)) {
    return `"${SERVICE_EVENT_SOURCE}" and sources starting with "${SERVICE_EVENT_SOURCE}:" are reserved for events the service emits itself`;
  }
  const webhook = webhookSources.get(source);
  if (webhook !== undefined)
    return `the source is reserved: the webhook source "${webhook}" stamps it on its verified deliveries`;
  return undefined;
}

/**
 * `*` matches any run of characters; everything else matches itself. A
 * linear scan (no regular expression: `*:*:*:x` against a long run of colons
 * would backtrack for minutes): the text before the first `*` must start the
 * value, the text after the last must end it, and the pieces between are
 * found left to right — the leftmost match of each leaves the most room for
 * the rest, so it never needs to look back.
 */
export function scopePatternMatches(pattern: string, value: string): boolean {
  const pieces = pattern.split('*');
  if (pieces.length === 1) return pattern === value;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (value.length < first.length + last.length || !value.startsWith(first) || !value.endsWith(last)) return false;
  const end = value.length - last.length;
  let position = first.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = value.indexOf(piece, position);
    if (found === -1 || found + piece.length > end) return false;
    position = found + piece.length;
  }
  return true;
}

/**
 * What the events table records as the credential of a posted event: the
 * key's set and id, never the key; `anonymous` while authentication is off.
 */
export function credentialLabel(credential: RequestCredential | undefined): string {
  return formatCredentialLabel(
    credential === undefined ? { kind: 'anonymous' } : { kind: credential.kind, id: credential.id },
  );
}

/** Who posts: the request's credential. Absent while authentication is off. */
/**
 * The answer a sender that is not a management key gets (an ingest key, a
 * webhook sender): accepted or duplicate, under which id — not which
 * activities exist, what they are called or what their filters say.
 */
export function senderAnswer(answer: EventAcceptedResponse): EventAcceptedResponse {
  return { event_id: answer.event_id, event_id_assigned: answer.event_id_assigned, status: answer.status };
}

export interface Poster {
  credential?: RequestCredential;
}

/** Where a field problem is reported: a path of the item's own, or undefined for the default `[i].a.b` form. */
export type FieldPathOf = (path: readonly PropertyKey[]) => string | undefined;

function issuesOf(error: z.ZodError, prefix: string, pathOf?: FieldPathOf): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: pathOf?.(issue.path) ?? formatPath([...(prefix ? [prefix] : []), ...issue.path]),
    message: issue.message,
    code: issue.code,
  }));
}

/**
 * How a posted item is read. Absent: an envelope, or a CloudEvent when it
 * has `specversion` (`application/json`). `cloudEvent`: always a CloudEvent
 * (the CloudEvents content modes); `fieldPath` then says where its fields
 * came from (binary mode: `header.ce-type`, …).
 */
export interface ItemFormat {
  cloudEvent?: { fieldPath?: FieldPathOf };
}

/**
 * Normalises one posted item (envelope or CloudEvent) and resolves its id:
 * body, else Idempotency-Key, else assigned here.
 */
export function normaliseEvent(
  body: unknown,
  options: { idempotencyKey?: string; receivedAt: Date; pathPrefix?: string } & ItemFormat,
): { envelope: EventEnvelope; idOrigin: EventIdOrigin } {
  const prefix = options.pathPrefix ?? '';
  const asCloudEvent = options.cloudEvent !== undefined || isCloudEvent(body);
  const pathOf = options.cloudEvent?.fieldPath;
  let input: EventEnvelopeInput;
  if (asCloudEvent) {
    const parsed = CloudEvent.safeParse(body);
    if (!parsed.success) throw new InvalidInputError('not a valid CloudEvent', issuesOf(parsed.error, prefix, pathOf));
    input = envelopeFromCloudEvent(parsed.data, options.receivedAt);
  } else {
    const parsed = EventEnvelopeInput.safeParse(body);
    if (!parsed.success) throw new InvalidInputError('not a valid event envelope', issuesOf(parsed.error, prefix));
    input = parsed.data;
  }
  let idOrigin: EventIdOrigin;
  let eventId: string;
  if (input.event_id !== undefined) {
    if (options.idempotencyKey !== undefined && options.idempotencyKey !== input.event_id) {
      throw new InvalidInputError(
        'the Idempotency-Key header and the event id in the body differ; send one id per event',
        [{ path: 'headers.idempotency-key', message: 'differs from event_id' }],
      );
    }
    eventId = input.event_id;
    idOrigin = 'body';
  } else if (options.idempotencyKey !== undefined) {
    eventId = options.idempotencyKey;
    idOrigin = 'idempotency_key';
  } else {
    eventId = assignedEventId();
    idOrigin = 'assigned';
  }
  const reserved = reservedEventIdReason(eventId);
  if (reserved !== undefined) {
    // The field the id came from: `event_id` of an envelope, `id` of a CloudEvent (`ce-id` in binary mode).
    const idField = asCloudEvent ? 'id' : 'event_id';
    const path =
      idOrigin === 'body'
        ? (pathOf?.([idField]) ?? formatPath([...(prefix ? [prefix] : []), idField]))
        : 'headers.idempotency-key';
    throw new InvalidInputError(`event_id ${eventId} is reserved`, [{ path, message: reserved }]);
  }
  const envelope = EventEnvelope.safeParse({ ...input, event_id: eventId });
  if (!envelope.success) throw new InvalidInputError('invalid event id', issuesOf(envelope.error, prefix));
  return { envelope: envelope.data, idOrigin };
}

/** What became of one posted event: stored now, or a redelivery of a stored one. The answer is the same shape for both. */
export type EventOutcome = { kind: 'accepted' | 'duplicate'; answer: EventAcceptedResponse };

export function eventOutcomeOf(answer: EventAcceptedResponse): EventOutcome {
  return { kind: answer.status === 'duplicate' ? 'duplicate' : 'accepted', answer };
}

/**
 * What became of one item of a batch: stored (or a redelivery), refused for
 * a known cause (a domain error, the cause a single event would be refused
 * for), or failed unexpectedly (logged; it may have been stored). `event_id`
 * is the item's id when it had one (given, derived or assigned): resent with
 * it, a retry cannot double the item.
 */
export type BatchItemOutcome =
  | ({ index: number } & EventOutcome)
  | { index: number; kind: 'refused'; error: DomainError; event_id?: string }
  | { index: number; kind: 'failed'; event_id?: string };

export function createEventService(deps: {
  ingest: Pick<EventIngest, 'ingest'>;
  events: Pick<EventsRepository, 'get'>;
  /** The cancel_on record of events (what each event looked at and which runs it cancelled). */
  cancellations?: Pick<CancellationsRepository, 'listForEvent'>;
  /** The wait_for_event record of events (the waits each event looked at and the ones it resumed). */
  eventWaits?: Pick<EventWaitsRepository, 'listForEvent'>;
  /** Forced replays of an event, shown with it. */
  replays?: Pick<ReplaysRepository, 'listForEvent'>;
  /** Configured webhook sources, whose custom `event_source` values are reserved too (the cached catalog). */
  webhookSources?: Pick<WebhookSourceCatalog, 'reservedEventSourcesVersioned' | 'peekReservedEventSources'>;
  /** What each scoped ingest key may send, by key id (INGEST_KEY_SCOPES). */
  ingestKeyScopes?: Readonly<Record<string, IngestKeyScope>>;
  logger?: Pick<Logger, 'error'>;
}) {
  const scopes = deps.ingestKeyScopes ?? {};

  /**
   * The envelope as it is stored: an event posted by an ingest key limited to
   * some sources is identified by its source and its id together
   * (sourceScopedEventId), so that producer's ids cannot collide with, take
   * or reveal another producer's. Everyone else's ids are stored as sent.
   */
  function storedEnvelope(envelope: EventEnvelope, poster: Poster): EventEnvelope {
    const { credential } = poster;
    if (credential?.kind !== 'ingest_key' || scopes[credential.id]?.sources === undefined) return envelope;
    return { ...envelope, event_id: sourceScopedEventId(envelope.source, envelope.event_id) };
  }

  /**
   * What the sender gets back. A management key (or anyone while
   * authentication is off) sees which activities the event started or was
   * filtered by; an ingest key sees only that its event was accepted (or was
   * a duplicate) under which id: the activities, their names and their
   * filters are not a sender's business, and some senders keep every answer.
   */
  function answerFor(answer: EventAcceptedResponse, poster: Poster): EventAcceptedResponse {
    return poster.credential?.kind === 'ingest_key' ? senderAnswer(answer) : answer;
  }

  /** An error that names the stored id, re-told with the id the sender used (the one to retry with). */
  function inSendersTerms(error: unknown, stored: string, sent: string): unknown {
    if (stored === sent) return error;
    if (error instanceof StoreUnreachableError && error.eventId === stored)
      return new StoreUnreachableError(error.nothingStored, sent);
    if (error instanceof EventIdReusedError && error.eventId === stored) return new EventIdReusedError(sent);
    return error;
  }

  async function ingestAs(
    envelope: EventEnvelope,
    idOrigin: EventIdOrigin,
    poster: Poster,
    origin: Parameters<EventIngest['ingest']>[2],
  ): Promise<EventAcceptedResponse> {
    const stored = storedEnvelope(envelope, poster);
    try {
      return answerFor(await deps.ingest.ingest(stored, idOrigin, origin), poster);
    } catch (error) {
      throw inSendersTerms(error, stored.event_id, envelope.event_id);
    }
  }

  /** The reserved sources as they are now: a counter read, and the rows when it moved. */
  async function currentSources(catalog: NonNullable<typeof deps.webhookSources>): Promise<VersionedReservedSources> {
    try {
      return await catalog.reservedEventSourcesVersioned();
    } catch (error) {
      // Read before anything is written: nothing was stored.
      if (translatePgError(error) instanceof DatabaseUnreachableError) throw new StoreUnreachableError(true);
      throw error;
    }
  }

  /**
   * Custom `event_source` → webhook source name, with the sources' change
   * counter. As last loaded, without a read: the accept statement checks the
   * counter (`webhookSourcesCheck`), and when a source changed since, the
   * event is checked again on the sources as they are then. Only the first
   * call of a process reads (and a process's first events wait for it).
   */
  async function webhookEventSources(): Promise<VersionedReservedSources> {
    if (deps.webhookSources === undefined) return { version: undefined, reservedEventSources: new Map() };
    return deps.webhookSources.peekReservedEventSources() ?? (await currentSources(deps.webhookSources));
  }

  /**
   * Checks an event (`check` throws to refuse it) on `sources`, the sources
   * as last loaded. A pass is confirmed by the accept statement's counter
   * check; a refusal is confirmed here: it may be stale (a source released
   * or changed through another process since), so a refused event is checked
   * again on the sources as they are now before the refusal stands. Returns
   * the sources the event passed on.
   */
  async function checkReservedSources(
    sources: VersionedReservedSources,
    check: (reserved: ReadonlyMap<string, string>) => void,
  ): Promise<VersionedReservedSources> {
    try {
      check(sources.reservedEventSources);
      return sources;
    } catch (error) {
      if (!(error instanceof InvalidInputError) || deps.webhookSources === undefined) throw error;
      const fresh = await currentSources(deps.webhookSources);
      check(fresh.reservedEventSources);
      return fresh;
    }
  }

  /**
   * What the accept checks `check`'s reserved-source decision against, and
   * how to make it again; `onFresh` hears of the sources a re-check read.
   */
  function recheckOnAccept(
    checked: VersionedReservedSources,
    check: (reserved: ReadonlyMap<string, string>) => void,
    onFresh: (fresh: VersionedReservedSources) => void = () => undefined,
  ) {
    const catalog = deps.webhookSources;
    if (catalog === undefined || checked.version === undefined) return {};
    return {
      webhookSourcesCheck: {
        version: checked.version,
        recheck: async () => {
          const fresh = await currentSources(catalog);
          onFresh(fresh);
          check(fresh.reservedEventSources);
          return fresh.version;
        },
      },
    };
  }

  /** Refuses reserved sources (InvalidInputError) and anything outside a scoped ingest key's scope (ForbiddenError). */
  function authorise(
    envelope: EventEnvelope,
    poster: Poster,
    reserved: ReadonlyMap<string, string>,
    prefix: string,
    format: ItemFormat = {},
  ): void {
    // Binary-mode CloudEvents name the header the field came from (`source` → `header.ce-source`, `event_type` → `header.ce-type`).
    const pathOf = format.cloudEvent?.fieldPath;
    const at = (field: 'source' | 'event_type') =>
      pathOf?.([field === 'event_type' ? 'type' : field]) ?? formatPath([...(prefix ? [prefix] : []), field]);
    const reason = reservedSourceReason(envelope.source, reserved);
    if (reason !== undefined) {
      throw new InvalidInputError(`source "${envelope.source}" is reserved`, [{ path: at('source'), message: reason }]);
    }
    const { credential } = poster;
    if (credential?.kind !== 'ingest_key') return;
    const scope = scopes[credential.id];
    if (scope === undefined) return;
    const issues: FieldIssue[] = [];
    if (
      scope.sources !== undefined &&
      !scope.sources.some((pattern) => scopePatternMatches(pattern, envelope.source))
    ) {
      issues.push({
        path: at('source'),
        message: `this key may send only sources matching ${scope.sources.map((p) => JSON.stringify(p)).join(', ')}`,
      });
    }
    if (
      scope.event_types !== undefined &&
      !scope.event_types.some((pattern) => scopePatternMatches(pattern, envelope.event_type))
    ) {
      issues.push({
        path: at('event_type'),
        message: `this key may send only event types matching ${scope.event_types.map((p) => JSON.stringify(p)).join(', ')}`,
      });
    }
    if (issues.length > 0) {
      throw new ForbiddenError(
        `ingest key ${credential.id} may not send this event: ${issues.map((issue) => issue.path).join(' and ')} outside its scope`,
        issues,
      );
    }
  }

  return {
    async accept(
      body: unknown,
      options: { idempotencyKey?: string; receivedAt: Date } & Poster & ItemFormat,
    ): Promise<EventOutcome> {
      const { envelope, idOrigin } = normaliseEvent(body, options);
      const check = (reserved: ReadonlyMap<string, string>) => authorise(envelope, options, reserved, '', options);
      const sources = await checkReservedSources(await webhookEventSources(), check);
      return eventOutcomeOf(
        await ingestAs(envelope, idOrigin, options, {
          credential: credentialLabel(options.credential),
          ...recheckOnAccept(sources, check),
        }),
      );
    },

    /**
     * Each item stands alone: one bad item is reported and the others are
     * accepted. Once anything may have been stored the answer is per item,
     * whatever happens: an unexpected error in one item fails that item
     * (logged), never the whole request, so a client never retries items
     * that were stored. The whole request fails (UnavailableError) only when
     * the store was unreachable before any item could be written.
     *
     * With `idempotencyKey`, an item without an event_id gets
     * `{key}#{index}`, so resending the same batch under the same key
     * cannot double it. With `cloudEvent` (a CloudEvents batch) every item
     * is read as a CloudEvent, whose `id` is required.
     */
    async acceptBatch(
      items: unknown[],
      options: { idempotencyKey?: string; receivedAt: Date } & Poster & ItemFormat,
    ): Promise<BatchItemOutcome[]> {
      const { receivedAt, idempotencyKey } = options;
      if (idempotencyKey !== undefined && idempotencyKey.length > MAX_BATCH_IDEMPOTENCY_KEY) {
        throw new InvalidInputError(
          `with a batch, Idempotency-Key is at most ${MAX_BATCH_IDEMPOTENCY_KEY} characters (item ids are {key}#{index})`,
          [
            {
              path: 'headers.idempotency-key',
              message: `at most ${MAX_BATCH_IDEMPOTENCY_KEY} characters with a batch`,
            },
          ],
        );
      }
      // The sources the items are checked on; a re-check's newer read serves the items after it.
      let sources = await webhookEventSources();
      const fresher = (fresh: VersionedReservedSources) => {
        if (sources.version === undefined || (fresh.version !== undefined && fresh.version > sources.version))
          sources = fresh;
      };
      const credential = credentialLabel(options.credential);
      const results: BatchItemOutcome[] = [];
      let mayHaveStored = false;
      for (const [index, item] of items.entries()) {
        let eventId: string | undefined;
        try {
          const hasOwnId =
            options.cloudEvent !== undefined ||
            (typeof item === 'object' && item !== null && ('event_id' in item || isCloudEvent(item)));
          const { envelope, idOrigin } = normaliseEvent(item, {
            receivedAt,
            pathPrefix: `[${index}]`,
            ...(options.cloudEvent === undefined ? {} : { cloudEvent: options.cloudEvent }),
            ...(idempotencyKey === undefined || hasOwnId
              ? {}
              : { idempotencyKey: batchItemEventId(idempotencyKey, index) }),
          });
          eventId = envelope.event_id;
          const check = (reserved: ReadonlyMap<string, string>) => authorise(envelope, options, reserved, `[${index}]`);
          const passed = await checkReservedSources(sources, check);
          fresher(passed);
          results.push({
            index,
            ...eventOutcomeOf(
              await ingestAs(envelope, idOrigin, options, {
                credential,
                ...recheckOnAccept(passed, check, fresher),
              }),
            ),
          });
          mayHaveStored = true;
        } catch (error) {
          const withId = eventId === undefined ? {} : { event_id: eventId };
          if (!(error instanceof DomainError)) {
            // Not the client's fault and not a known refusal: this item only. It may or may not have been stored.
            mayHaveStored = true;
            deps.logger?.error({ err: error, index, eventId }, 'batch item failed unexpectedly');
            results.push({ index, kind: 'failed', ...withId });
            continue;
          }
          // Unavailable, unless certainly before anything was written: the item may be stored.
          if (error.code === 'unavailable' && !(error instanceof StoreUnreachableError && error.nothingStored))
            mayHaveStored = true;
          results.push({ index, kind: 'refused', error, ...withId });
        }
      }
      // Nothing stored because the store is down: say so for the whole request, as for a single event.
      if (
        !mayHaveStored &&
        results.every((result) => result.kind === 'refused' && result.error.code === 'unavailable')
      ) {
        throw new UnavailableError('the event store is unreachable; nothing was accepted, retry later');
      }
      return results;
    },

    /** The event as stored and what routing decided for it. */
    async get(eventId: string) {
      const found = await deps.events.get(eventId);
      if (found === undefined) throw new NotFoundError('event', eventId);
      const { event, routes } = found;
      const [cancelOn, waits, replays] = await Promise.all([
        deps.cancellations?.listForEvent(eventId) ?? { scans: [], cancellations: [] },
        deps.eventWaits?.listForEvent(eventId) ?? { scan: undefined, waits: [] },
        deps.replays?.listForEvent(eventId) ?? [],
      ]);
      return {
        event_id: event.eventId,
        envelope: event.payload as EventEnvelope,
        id_origin: event.idOrigin as EventIdOrigin,
        credential: event.credential,
        hops: event.hops,
        fingerprint: event.fingerprint,
        received_at: event.receivedAt.toISOString(),
        payload_expired_at: event.payloadExpiredAt?.toISOString() ?? null,
        routing_state: event.routingState as 'pending' | 'routed',
        routing_attempts: event.routingAttempts,
        routed_at: event.routedAt?.toISOString() ?? null,
        last_error: event.lastError,
        routes: routes.map((route) => ({
          activity_id: route.activityId,
          activity_name: route.activityName,
          activity_version: route.activityVersion,
          workflow_id: route.workflowId,
          run_id: route.runId,
          outcome: route.outcome as RouteOutcome,
          detail: route.detail,
          reason_code: route.reasonCode as DeadLetterRouteReason | null,
          discarded_at: route.discardedAt?.toISOString() ?? null,
          not_before: route.notBefore?.toISOString() ?? null,
          decided_at: route.createdAt.toISOString(),
          updated_at: route.updatedAt.toISOString(),
        })),
        cancel_on: {
          scans: cancelOn.scans.map((scan) => ({
            activity_id: scan.activityId,
            activity_name: scan.activityName,
            activity_version: scan.activityVersion,
            examined: scan.examined,
            capped: scan.capped,
            matched: scan.matched,
            errors: scan.errors,
            scanned_at: scan.scannedAt.toISOString(),
          })),
          cancellations: cancelOn.cancellations.map((row) => ({
            activity_id: row.activityId,
            run_id: row.runId,
            workflow_id: row.workflowId,
            outcome: row.outcome as 'pending' | 'cancel_requested' | 'already_closed',
            detail: row.detail,
            decided_at: row.createdAt.toISOString(),
            updated_at: row.updatedAt.toISOString(),
          })),
        },
        waits: {
          scan:
            waits.scan === undefined
              ? null
              : {
                  examined: waits.scan.examined,
                  capped: waits.scan.capped,
                  matched: waits.scan.matched,
                  errors: waits.scan.errors,
                  scanned_at: waits.scan.scannedAt.toISOString(),
                },
          resumed: waits.waits.map((row) => ({
            wait_id: row.waitId,
            run_id: row.runId,
            activity_id: row.activityId,
            task_index: row.taskIndex,
            signal: (row.signalState ?? 'pending') as EventWaitSignalState,
            detail: row.detail,
            matched_at: (row.closedAt ?? row.updatedAt).toISOString(),
          })),
        },
        replays: replays.map((row) => ({
          run_id: row.runId,
          workflow_id: row.workflowId,
          activity_id: row.activityId,
          activity_version: row.activityVersion,
          replay_of: row.replayOf,
          attempt: row.attempt,
          status: row.status,
          bulk_replay_id: row.bulkReplayId,
          requested_by: row.requestedBy,
          requested_at: row.requestedAt.toISOString(),
        })),
      };
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
