/**
 * Accept: makes an event durable. Checks its bounds, decides its routes on
 * the loaded definitions and stores the event with them in one statement,
 * which dedupes it by id and fingerprint; a change to the definitions (or to
 * the webhook sources it was checked on) under it makes it decide again.
 * Starts nothing.
 */
import {
  assertEventDataWithinBounds,
  assertTextStorable,
  DEFAULT_EVENT_DATA_LIMITS,
  EventIdReusedError,
  InvalidInputError,
  type EventEnvelope,
  type EventIdOrigin,
} from '@activity-core/contracts';
import {
  DatabaseUnreachableError,
  failedToConnect,
  translatePgError,
  UnstorableTextError,
  type AcceptResult,
  type DefinitionRow,
  type EventRouteRow,
} from '@activity-core/db';
import type { DefinitionIndex } from './definition-index';
import { eventFingerprint } from './fingerprint';
import type { IngestContext } from './ingest-deps';
import { matchRoutes, storedRoutedAtAccept } from './ingest-plan';
import { inSpan } from './tracing';

/**
 * Postgres could not be reached while accepting an event. `nothingStored`
 * is true when it failed before the write began (so certainly nothing was
 * stored); a failure during the write may have happened after the commit.
 */
export class StoreUnreachableError extends DatabaseUnreachableError {
  /**
   * The event's id when it may have been stored, so the answer can name it: a
   * client whose event got an assigned id must retry with that id (in the
   * body or as Idempotency-Key), or a stored event would run twice.
   */
  readonly eventId: string | undefined;

  constructor(
    readonly nothingStored: boolean,
    eventId?: string,
  ) {
    super(
      nothingStored
        ? 'the event store is unreachable; nothing was accepted, retry later'
        : `the event store became unreachable while storing the event; it may have been stored: retry later with event_id ${JSON.stringify(eventId ?? '(the same id)')}`,
    );
    this.eventId = nothingStored ? undefined : eventId;
  }
}

/** What the ingress records about where an event came from, besides its content. */
export interface IngestOrigin {
  /**
   * Which credential delivered it: `api_key:<id>`, `ingest_key:<id>`,
   * `webhook:<source>`, `emit:<run id>` or `anonymous`. Never a key itself.
   */
  credential?: string;
  /** emit_event steps between this event and an external one. @default 0 */
  hops?: number;
  /**
   * A check the caller made of the event against the webhook sources
   * (reserved sources), made one decision with the accept: the event is
   * stored, or a redelivery answered, only if the sources' change counter is
   * still `version`. If it moved, `recheck` checks the event again on the
   * sources as they are now (throwing to refuse it) and returns their
   * counter, and the accept is tried again. Saves the caller a counter read
   * of its own before every accept.
   */
  webhookSourcesCheck?: WebhookSourcesCheck;
}

export interface WebhookSourcesCheck {
  /** The counter of the sources the event was checked against; undefined: unchecked. */
  version: bigint | undefined;
  recheck(): Promise<bigint | undefined>;
}

/** What the accept stored: a redelivery of a stored event, or a new event with what its inline dispatch needs. */
export type Accepted =
  | { kind: 'duplicate'; routes: EventRouteRow[] }
  | {
      kind: 'accepted';
      routes: EventRouteRow[];
      /** The definition versions its pending routes were decided on, by activity id. */
      snapshots: ReadonlyMap<string, DefinitionRow>;
      /** Stored routed already: no route needs Temporal, so there is nothing to record. */
      storedRouted: boolean;
      /** The definitions the routes were decided on. */
      index: DefinitionIndex<DefinitionRow>;
      /** The accept found a wait_for_event task waiting for this type. */
      waitsOpen: boolean;
    };

/** How often an accept is retried on definitions that changed under it before it accepts unchecked. */
const STALE_RETRIES = 5;

export function createEventAccept(ctx: IngestContext) {
  const { deps, definitionCache } = ctx;

  /**
   * Throws EventIdReusedError when the id is taken by different content,
   * StoreUnreachableError when Postgres cannot store it, InvalidInputError
   * when it is out of bounds or holds text Postgres cannot store.
   */
  return async function accept(
    envelope: EventEnvelope,
    idOrigin: EventIdOrigin,
    origin: IngestOrigin,
  ): Promise<Accepted> {
    // First: every ingress path (posted, batched, webhook, emitted) comes through here, and nothing below may see unbounded data.
    assertEventDataWithinBounds(envelope.data, deps.eventDataLimits ?? DEFAULT_EVENT_DATA_LIMITS);
    const { event_id, source, event_type, subject } = envelope;
    assertTextStorable({ event_id, source, event_type, subject });
    const fingerprint = eventFingerprint(envelope);
    const hops = origin.hops ?? 0;
    let result: AcceptResult;
    let snapshots: Map<string, DefinitionRow>;
    let storedRouted: boolean;
    let index: DefinitionIndex<DefinitionRow>;
    let writing = false;
    try {
      // The index loaded last, unchecked: the accept statement checks its version and says when it is stale.
      let definitions = definitionCache.peek() ?? (await definitionCache.currentVersioned());
      let sourcesVersion = origin.webhookSourcesCheck?.version;
      let sourcesRechecks = 0;
      for (let attempt = 0; ;) {
        const matched = matchRoutes(definitions.index, envelope);
        snapshots = matched.snapshots;
        index = definitions.index;
        // An event some trigger's cancel_on names is stored pending, so the dispatcher finishes its cancellations if this process cannot.
        const holdForRouting = deps.cancelOn?.watches(definitions.index, envelope.event_type) === true;
        // What the accept stores as routing_state: routed at once when no route needs Temporal.
        storedRouted = storedRoutedAtAccept(matched.routes, holdForRouting);
        // After a few changes in a row, accept on the newest loaded definitions, as a version read just before would have.
        const definitionsVersion = attempt < STALE_RETRIES ? definitions.version : undefined;
        writing = true;
        // The statement that makes the event durable, a span of its own in the ingest's trace.
        result = await inSpan('event accept', {}, () =>
          deps.events.accept({
            envelope,
            fingerprint,
            idOrigin,
            routes: matched.routes,
            leaseMs: ctx.leaseMs,
            hops,
            ...(holdForRouting ? { holdForRouting } : {}),
            ...(origin.credential === undefined ? {} : { credential: origin.credential }),
            ...(definitionsVersion === undefined ? {} : { definitionsVersion }),
            ...(sourcesVersion === undefined ? {} : { webhookSourcesVersion: sourcesVersion }),
          }),
        );
        if (result.kind === 'stale_webhook_sources') {
          // Nothing was stored: check the event again on the sources as they are now (this may refuse it).
          writing = false;
          sourcesRechecks++;
          const rechecked = await origin.webhookSourcesCheck!.recheck();
          // After a few changes in a row, accept on the check just made, as a counter read just before would have.
          sourcesVersion = sourcesRechecks < STALE_RETRIES ? rechecked : undefined;
          continue;
        }
        if (result.kind !== 'stale_definitions') break;
        // Nothing was stored: decide again on the definitions as they are now.
        writing = false;
        attempt++;
        definitions = await definitionCache.currentVersioned();
      }
    } catch (error) {
      const translated = translatePgError(error);
      // Nothing was stored when the accept never reached Postgres: it failed before its statement, or could not connect.
      if (translated instanceof DatabaseUnreachableError)
        throw new StoreUnreachableError(!writing || failedToConnect(error), envelope.event_id);
      if (translated instanceof UnstorableTextError)
        throw new InvalidInputError('the event contains text Postgres cannot store (e.g. a NUL character \\u0000)', [
          { path: 'data', message: 'contains a character that cannot be stored' },
        ]);
      throw error;
    }
    if (result.kind === 'fingerprint_mismatch') throw new EventIdReusedError(envelope.event_id);
    if (result.kind === 'duplicate') return { kind: 'duplicate', routes: result.routes };
    // The accept also looked for open waits of this type: an event one is waiting for was stored pending.
    const waitsOpen = result.waitsOpen === true;
    return {
      kind: 'accepted',
      routes: result.routes,
      snapshots,
      storedRouted: storedRouted && !waitsOpen,
      index,
      waitsOpen,
    };
  };
}
