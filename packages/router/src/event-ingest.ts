import {
  assertEventDataWithinBounds,
  assertTextStorable,
  DEFAULT_EVENT_DATA_LIMITS,
  type EventDataLimits,
  EventIdReusedError,
  InvalidInputError,
  eventRunWorkflowId,
  runIdFor,
  type ActivityDefinition,
  type EventAcceptedWithRoutes,
  type EventEnvelope,
  type EventFilteredResult,
  type EventIdOrigin,
  type EventRunResult,
  type Logger,
  type RouteOutcome,
} from '@activity-core/contracts';
import {
  DatabaseUnreachableError,
  failedToConnect,
  translatePgError,
  UnstorableTextError,
  type AcceptResult,
  type DefinitionRow,
  type DefinitionsRepository,
  type EventRouteRow,
  type EventsRepository,
  type NewRoute,
  type RouteSettlement,
  type RunsRepository,
} from '@activity-core/db';
import { isTemporalUnreachable, StartTimeoutError, type RunStarter } from '@activity-core/temporal/client';
import { createAvailabilityGate, type AvailabilityGate } from './availability-gate';
import type { CancelOn } from './cancel-on';
import type { EventWaits } from './event-waits';
import { eventFingerprint } from './fingerprint';
import { createDefinitionCache, type DefinitionIndex } from './definition-index';
import { decideForActivity } from './matching';
import { inSpan } from './tracing';

export interface EventIngestDeps {
  definitions: Pick<DefinitionsRepository, 'listEnabled' | 'getVersion' | 'currentVersion'>;
  /**
   * Called each time the in-process index of enabled definitions is
   * (re)loaded: with the change counter it was loaded at and its size.
   */
  onDefinitionsLoad?: (version: bigint | undefined, size: number) => void;
  events: Pick<EventsRepository, 'accept' | 'settle'>;
  starter: RunStarter;
  /**
   * The run records, for the dispatcher's retries: a route whose run row
   * already exists is a duplicate without asking Temporal, whose memory of
   * closed runs ends with namespace retention while ours does not. (A new
   * event gets the same check inside its accept statement.)
   */
  runs: Pick<RunsRepository, 'getRunByWorkflowId'>;
  logger: Logger;
  /** How long an inline dispatch keeps background dispatchers away. @default 30000 */
  inlineLeaseMs?: number;
  /**
   * Deadline for one Temporal start call; past it the route is left to the
   * dispatcher. It is also the longest a request waits on an unreachable
   * Temporal, and only the first requests of an outage (or one probe per
   * retry window) wait at all — see AvailabilityGate. @default 5000
   */
  startTimeoutMs?: number;
  /**
   * Deadline for a probe: the one start call per retry window that tests
   * whether an unreachable Temporal is back. Short, so a Temporal that
   * returns is noticed within about this plus the gate's retry window.
   * @default 2000
   */
  probeTimeoutMs?: number;
  /** Shared knowledge of whether Temporal answers. @default a new gate with its defaults */
  gate?: AvailabilityGate;
  /** Bounds on event `data` (EVENT_DATA_LIMIT_BYTES, EVENT_DATA_MAX_DEPTH). @default 256 KiB, 32 levels */
  eventDataLimits?: EventDataLimits;
  /** Triggers' `cancel_on` (cancel-on.ts): events that cancel running runs. Without it, cancel_on entries are ignored. */
  cancelOn?: CancelOn;
  /** `wait_for_event` tasks (event-waits.ts): events that resume waiting tasks. Without it, waits are never resumed by events. */
  eventWaits?: EventWaits;
}

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

/**
 * Backoff for routing retries of one event that Temporal refused (as opposed
 * to Temporal being unreachable, which the gate handles for all events at
 * once): 1 s, 2 s, 4 s ... capped at 60 s.
 */
export function routingBackoffMs(attempt: number): number {
  return Math.min(60_000, 1_000 * 2 ** Math.max(0, attempt - 1));
}

/** Shortest wait before a deferred event is retried, so a flapping gate cannot spin the dispatcher. */
const MIN_DEFERRED_RETRY_MS = 200;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StartTimeoutError(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const isRunRoute = (route: EventRouteRow): boolean =>
  route.outcome === 'pending' || route.outcome === 'started' || route.outcome === 'duplicate';

function filteredResults(routes: EventRouteRow[]): EventFilteredResult[] {
  return routes
    .filter((route) => route.outcome === 'filtered' || route.outcome === 'filter_error')
    .map((route) => ({
      activity_id: route.activityId,
      activity_name: route.activityName,
      status: route.outcome as EventFilteredResult['status'],
      detail: route.detail ?? '',
    }));
}

/**
 * Durable accept, then route. The event and the list of activities it
 * matched (filter decisions included) are committed in one transaction
 * before anything is started, so a 2xx always means "on disk", and
 * redeliveries see the first decision instead of making a new one.
 */
export function createEventIngest(deps: EventIngestDeps) {
  const leaseMs = deps.inlineLeaseMs ?? 30_000;
  const startTimeoutMs = deps.startTimeoutMs ?? 5_000;
  const probeTimeoutMs = deps.probeTimeoutMs ?? 2_000;
  const gate = deps.gate ?? createAvailabilityGate();
  // Parsed once per change to the definitions (any process's), not per event; see createDefinitionCache.
  const definitionCache = createDefinitionCache(deps.definitions, {
    onLoad: (version, size) => {
      deps.logger.debug({ definitionsVersion: version?.toString(), definitions: size }, 'definition index loaded');
      deps.onDefinitionsLoad?.(version, size);
    },
  });

  /**
   * The routes an event gets from the definitions in `index`, and the
   * definition version each pending route names (so its run is started
   * without reading the definition again).
   */
  function matchRoutes(
    index: DefinitionIndex<DefinitionRow>,
    envelope: EventEnvelope,
  ): { routes: NewRoute[]; snapshots: Map<string, DefinitionRow> } {
    const routes: NewRoute[] = [];
    const snapshots = new Map<string, DefinitionRow>();
    for (const row of index.candidates(envelope.event_type)) {
      const decision = decideForActivity(row.triggers, envelope);
      if (decision === undefined) continue;
      const workflowId = eventRunWorkflowId(row.id, envelope.event_id);
      routes.push({
        activityId: row.id,
        activityVersion: row.version,
        activityName: row.name,
        // For filtered routes: the run this event would have had, for the record.
        workflowId,
        runId: runIdFor(workflowId),
        outcome: decision.outcome,
        ...(decision.outcome === 'pending' ? {} : { detail: decision.detail }),
      });
      if (decision.outcome === 'pending') snapshots.set(row.id, row.row);
    }
    return { routes, snapshots };
  }

  /** How often an accept is retried on definitions that changed under it before it accepts unchecked. */
  const STALE_RETRIES = 5;

  /**
   * Starts every pending route of one event. Never throws: routes that could
   * not be started stay pending, and the event is given a retry time for the
   * dispatcher — soon when Temporal was unreachable (the gate's next probe),
   * with per-event backoff when Temporal refused the start.
   */
  async function dispatch(
    envelope: EventEnvelope,
    routes: EventRouteRow[],
    attempt = 1,
    hops = 0,
    /**
     * Set by the inline dispatch of a just-accepted event: the definition
     * versions its routes were decided on (no read needed), and its accept
     * already looked for recorded runs. The dispatcher's retries read both.
     */
    accepted?: {
      snapshots: ReadonlyMap<string, DefinitionRow>;
      storedRouted: boolean;
      index?: DefinitionIndex<DefinitionRow>;
      /** The accept found a wait_for_event task waiting for this type (absent: false). */
      waitsOpen?: boolean;
    },
  ): Promise<Map<string, RouteOutcome>> {
    const outcomes = new Map<string, RouteOutcome>();
    const settled: RouteSettlement[] = [];
    let failure: { message: string; unreachable: boolean } | undefined;
    for (const route of routes) {
      if (route.outcome !== 'pending') {
        outcomes.set(route.activityId, route.outcome as RouteOutcome);
        continue;
      }
      outcomes.set(route.activityId, 'pending');
      let snapshot = accepted?.snapshots.get(route.activityId);
      if (snapshot?.version !== route.activityVersion) snapshot = undefined;
      try {
        snapshot ??= await deps.definitions.getVersion(route.activityId, route.activityVersion);
        if (snapshot === undefined)
          throw new Error(`activity ${route.activityId} version ${route.activityVersion} is missing`);
      } catch (error) {
        // Our own store, not Temporal: the gate learns nothing from it.
        failure = { message: (error as Error).message, unreachable: false };
        deps.logger.warn(
          { eventId: envelope.event_id, workflowId: route.workflowId, err: error },
          'routing failed; the dispatcher will retry',
        );
        continue;
      }
      if (accepted === undefined) {
        try {
          if ((await deps.runs.getRunByWorkflowId(route.workflowId)) !== undefined) {
            settled.push({ activityId: route.activityId, outcome: 'duplicate' });
            outcomes.set(route.activityId, 'duplicate');
            deps.logger.info(
              { eventId: envelope.event_id, workflowId: route.workflowId },
              'run already recorded (duplicate)',
            );
            continue;
          }
        } catch (error) {
          failure = { message: (error as Error).message, unreachable: false };
          deps.logger.warn(
            { eventId: envelope.event_id, workflowId: route.workflowId, err: error },
            'routing failed; the dispatcher will retry',
          );
          continue;
        }
      }
      const pass = gate.tryEnter();
      if (pass === undefined) {
        failure ??= { message: 'Temporal is unreachable; routing deferred until it answers', unreachable: true };
        continue;
      }
      const timeoutMs = pass.probe ? probeTimeoutMs : startTimeoutMs;
      try {
        const outcome = await withTimeout(
          deps.starter.start(
            {
              workflowId: route.workflowId,
              activity: {
                id: snapshot.id,
                name: snapshot.name,
                version: snapshot.version,
                definition: snapshot.definition as ActivityDefinition,
              },
              // The hop count rides along only when non-zero, so runs of external events keep their old input.
              trigger: { type: 'event', event: envelope, ...(hops > 0 ? { hops } : {}) },
            },
            { deadline: new Date(Date.now() + timeoutMs) },
          ),
          // A backstop only: the deadline above normally ends the call first.
          timeoutMs + 2_000,
          'starting the run workflow',
        );
        gate.reachable(pass);
        settled.push({ activityId: route.activityId, outcome });
        outcomes.set(route.activityId, outcome);
        deps.logger.info(
          { eventId: envelope.event_id, workflowId: route.workflowId, outcome },
          outcome === 'started' ? 'run started' : 'run already existed (duplicate)',
        );
      } catch (error) {
        const unreachable = isTemporalUnreachable(error);
        if (unreachable) gate.unreachable(pass);
        else gate.reachable(pass);
        failure = { message: (error as Error).message, unreachable: unreachable && (failure?.unreachable ?? true) };
        deps.logger.warn(
          { eventId: envelope.event_id, workflowId: route.workflowId, err: error },
          'routing failed; the dispatcher will retry',
        );
      }
    }
    // Stored as routed already (no route needed Temporal): nothing to record.
    if (accepted?.storedRouted === true) return outcomes;
    // cancel_on: before the settle below, which marks the event routed only if nothing failed.
    const cancelFailure = await deps.cancelOn?.process(
      envelope,
      accepted?.index ?? (() => definitionCache.current()),
      gate,
      { quick: accepted !== undefined, timeoutMs: startTimeoutMs, probeTimeoutMs },
    );
    if (cancelFailure !== undefined)
      failure =
        failure === undefined
          ? cancelFailure
          : { message: failure.message, unreachable: failure.unreachable && cancelFailure.unreachable };
    // wait_for_event: likewise before the settle; its matches keep the event pending until their tasks are signalled.
    const waitFailure = await deps.eventWaits?.process(envelope, gate, {
      quick: accepted !== undefined,
      waitsOpen: accepted?.waitsOpen === true,
      timeoutMs: startTimeoutMs,
      probeTimeoutMs,
    });
    if (waitFailure !== undefined)
      failure =
        failure === undefined
          ? waitFailure
          : { message: failure.message, unreachable: failure.unreachable && waitFailure.unreachable };
    // One write for the whole attempt: every answer Temporal gave, then the event routed (or the failure and
    // when to retry). If it is lost the routes stay pending, and the dispatcher's next pass finds the runs
    // already started (Temporal answers "already started": duplicate) and settles the event.
    const retry =
      failure === undefined
        ? undefined
        : {
            message: failure.message,
            retryInMs: failure.unreachable
              ? Math.max(MIN_DEFERRED_RETRY_MS, gate.retryInMs())
              : routingBackoffMs(attempt),
          };
    await deps.events.settle(envelope.event_id, settled, retry).catch((error: unknown) => {
      deps.logger.warn(
        { eventId: envelope.event_id, err: error },
        'could not record the routing outcome; the dispatcher will settle the event',
      );
    });
    return outcomes;
  }

  function response(
    envelope: EventEnvelope,
    idOrigin: EventIdOrigin,
    status: 'accepted' | 'duplicate',
    routes: EventRouteRow[],
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

  const eventIngest = {
    dispatch,
    gate,
    /**
     * Accepts one event. Throws EventIdReusedError when the id is taken by
     * different content, UnavailableError when Postgres cannot store it.
     * `origin` is recorded with a new event: the credential that delivered it
     * and its hop count (emit_event steps from an external event, default 0).
     * A redelivery keeps what the first delivery recorded.
     */
    async ingest(
      envelope: EventEnvelope,
      idOrigin: EventIdOrigin,
      origin: IngestOrigin = {},
    ): Promise<EventAcceptedWithRoutes> {
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
          storedRouted = !holdForRouting && matched.routes.every((route) => route.outcome !== 'pending');
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
              leaseMs,
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
      // A redelivery starts nothing: every run it matched is a duplicate (docs/idempotency.md, layer 1),
      // even one the first delivery has not got Temporal to start yet.
      if (result.kind === 'duplicate')
        return response(envelope, idOrigin, 'duplicate', result.routes, () => 'duplicate');
      // The accept also looked for open waits of this type: an event one is waiting for was stored pending.
      const waitsOpen = result.waitsOpen === true;
      const outcomes = await dispatch(envelope, result.routes, 1, hops, {
        snapshots,
        storedRouted: storedRouted && !waitsOpen,
        index,
        waitsOpen,
      });
      return response(envelope, idOrigin, 'accepted', result.routes, (route) => {
        const outcome = outcomes.get(route.activityId);
        return outcome === 'started' || outcome === 'duplicate' ? outcome : 'pending';
      });
    },
  };
  return {
    ...eventIngest,
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
        () => eventIngest.ingest(envelope, idOrigin, origin),
      ),
  };
}

export type EventIngest = ReturnType<typeof createEventIngest>;
