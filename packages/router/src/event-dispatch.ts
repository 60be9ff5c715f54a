/**
 * Dispatch: starts the runs of an event's pending routes, each through the
 * one gated helper (`deliverPending`), then hands the attempt to settle.
 * Two entry points, one per moment an event is dispatched:
 *
 * - `dispatchAccepted`: inline, right after the accept, on the definition
 *   versions the routes were decided on (no read), whose accept statement
 *   already looked for recorded runs;
 * - `redispatch`: the dispatcher's retry of a pending event, which reads the
 *   definition versions and the run records again.
 */
import {
  batchRunWorkflowId,
  coalesceWindowWorkflowId,
  parseBatchRunWorkflowId,
  runIdFor,
  type ActivityDefinition,
  type Batch,
  type DeadLetterRouteReason,
  type Debounce,
  type EventEnvelope,
  type RouteOutcome,
} from '@activity-core/contracts';
import type { CoalesceWindowRow, DefinitionRow, EventRouteRow, RouteSettlement } from '@activity-core/db';
import {
  describeTemporalError,
  isPermanentRefusal,
  isTemporalUnreachable,
  StartTimeoutError,
  type StartOutcome,
} from '@activity-core/temporal/client';
import { batchBytesOf, batchFor, COALESCE_MAX_OPEN_WINDOWS, debounceFor, debounceKeyOf } from './coalescing';
import type { Accepted } from './event-accept';
import type { EventSettle } from './event-settle';
import { deliverPending, type PendingWorkFailure } from './gated-delivery';
import type { IngestContext } from './ingest-deps';
import { budgetExhausted } from './ingest-plan';
import { pacingRequestFor } from './pacing';

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StartTimeoutError(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A start call whose permanent refusal by Temporal (isPermanentRefusal) is an
 * answer, `{ refused }`, rather than a failure to retry; the routes whose
 * call failed otherwise with an answer (not Temporal unreachable) are noted
 * in `failed`, for the routing retry budget. Window starts are left as they are.
 */
function refusalsAsAnswers(
  failed: EventRouteRow[],
  call: (ready: StartReady, deadline: Date) => Promise<StartOutcome>,
): (ready: StartReady, deadline: Date) => Promise<StartOutcome | { refused: string }> {
  return async (ready, deadline) => {
    try {
      return await call(ready, deadline);
    } catch (error) {
      if (ready.window === undefined && ready.wake === undefined && isPermanentRefusal(error))
        return { refused: describeTemporalError(error) };
      if (!isTemporalUnreachable(error)) failed.push(ready.route);
      throw error;
    }
  };
}

/** What one route's start needs: its definition version, the debounce window it opens, its throttle's start time. */
interface StartReady {
  route: EventRouteRow;
  snapshot: DefinitionRow;
  window: CoalesceWindowRow | undefined;
  /** The batches whose workflows this route's event wakes (it closed them): their runs start from there. */
  wake: CoalesceWindowRow[] | undefined;
  notBefore: Date | undefined;
}

/** Every route's outcome by activity id, and the answers Temporal gave in this attempt. */
interface StartedRuns {
  outcomes: Map<string, RouteOutcome>;
  settled: RouteSettlement[];
  failure: PendingWorkFailure | undefined;
}

export function createEventDispatch(ctx: IngestContext, settle: EventSettle) {
  const { deps, logger } = ctx;

  const coalescing = deps.coalescing;

  /**
   * The key a debounce or a batch groups the event under, with the coalescing
   * store and what every join of a window is told about the member; undefined
   * (logged) when the event runs alone instead: this ingest has no coalescing
   * store, or the key expression failed on the event.
   */
  function coalescingKeyOf(
    what: 'debounce' | 'batch',
    policy: Debounce | Batch,
    envelope: EventEnvelope,
    route: EventRouteRow,
  ) {
    if (coalescing === undefined) {
      logger.warn(
        { eventId: envelope.event_id, activityId: route.activityId },
        'no coalescing here: the event runs alone',
      );
      return undefined;
    }
    const keyed = debounceKeyOf(policy, envelope);
    if ('error' in keyed) {
      logger.warn(
        { eventId: envelope.event_id, activityId: route.activityId, reason: keyed.error },
        `${what} key failed: the event runs alone`,
      );
      return undefined;
    }
    const key = keyed.key;
    return {
      store: coalescing,
      member: {
        eventId: envelope.event_id,
        activityId: route.activityId,
        activityVersion: route.activityVersion,
        key,
        bytes: batchBytesOf(envelope),
        maxOpen: coalescing.maxOpenWindows ?? COALESCE_MAX_OPEN_WINDOWS,
        workflowIdOf: (windowId: string) => coalesceWindowWorkflowId(route.activityId, key, windowId),
      },
    };
  }

  /**
   * A batched route's batch (docs/coalescing.md, "Batching"): `{ wake }`, the
   * batches whose workflows are to be started or woken (the one the event
   * opened, the one it closed, one the byte cap closed before it), `'done'`
   * when the event joined an open batch (its route is `coalescing`), or
   * undefined when the route is not batched or runs alone.
   */
  async function joinBatch(
    envelope: EventEnvelope,
    route: EventRouteRow,
    snapshot: DefinitionRow,
    outcomes: Map<string, RouteOutcome>,
  ): Promise<{ wake: CoalesceWindowRow[] } | 'done' | undefined> {
    const plan = batchFor(snapshot.definition as ActivityDefinition, envelope);
    if (plan === undefined) return undefined;
    const keyed = coalescingKeyOf('batch', plan.batch, envelope, route);
    if (keyed === undefined) return undefined;
    const joined = await keyed.store.windows.joinBatch({
      ...keyed.member,
      timeoutMs: plan.timeoutMs,
      maxSize: plan.batch.max_size,
      maxBytes: plan.maxBytes,
      runOf: (windowId) => {
        const workflowId = batchRunWorkflowId(route.activityId, windowId);
        return { workflowId, runId: runIdFor(workflowId) };
      },
    });
    switch (joined.kind) {
      case 'alone':
        return undefined;
      case 'settled':
        return 'done';
      case 'joined':
        outcomes.set(route.activityId, 'coalescing');
        return joined.wake.length === 0 ? 'done' : { wake: joined.wake };
      case 'opened':
        return { wake: [joined.window, ...joined.wake] };
      case 'closed':
      case 'member':
        return joined.wake.length === 0 ? 'done' : { wake: joined.wake };
    }
  }

  /**
   * A debounced route's window (coalescing.ts), or a batched route's batch
   * (joinBatch, tried first): the window the event opened
   * (its workflow is to be started), `'done'` when the event joined an open
   * window (its route is `coalescing` now) or was settled before, undefined
   * when the route is not debounced or runs alone (a key that fails, the
   * open-window bound): its run is started as usual.
   */
  async function joinWindow(
    envelope: EventEnvelope,
    route: EventRouteRow,
    snapshot: DefinitionRow,
    outcomes: Map<string, RouteOutcome>,
  ): Promise<CoalesceWindowRow | { wake: CoalesceWindowRow[] } | 'done' | undefined> {
    const batched = await joinBatch(envelope, route, snapshot, outcomes);
    if (batched !== undefined) return batched;
    const plan = debounceFor(snapshot.definition as ActivityDefinition, envelope);
    if (plan === undefined) return undefined;
    const keyed = coalescingKeyOf('debounce', plan.debounce, envelope, route);
    if (keyed === undefined) return undefined;
    const joined = await keyed.store.windows.join({
      ...keyed.member,
      periodMs: plan.periodMs,
      maxWaitMs: plan.maxWaitMs,
      runIdOf: runIdFor,
      ...(plan.debounce.mode === 'leading' ? { leading: { runWorkflowId: route.workflowId } } : {}),
    });
    if (joined.kind !== 'alone' && joined.kind !== 'settled' && joined.window.mode === 'leading') {
      // Leading: the window's first event runs at once, as an event without debounce; the rest were merged.
      if (joined.kind === 'merged') {
        outcomes.set(route.activityId, 'merged');
        return 'done';
      }
      return joined.window.firstEventId === envelope.event_id ? undefined : 'done';
    }
    switch (joined.kind) {
      case 'alone':
        return undefined;
      case 'settled':
        return 'done';
      case 'joined':
        outcomes.set(route.activityId, 'coalescing');
        return 'done';
      case 'merged':
        return 'done';
      case 'opened':
        return joined.window;
      case 'member':
        // A retry: the opener (still pending) starts its window's workflow again; Temporal answers duplicate.
        return joined.window.state === 'open' && joined.window.firstEventId === envelope.event_id
          ? joined.window
          : 'done';
    }
  }

  /** Starts (or wakes, signal-with-start) the workflows of batches, in order; `duplicate` only when every one had ended. */
  async function wakeBatches(
    windows: readonly CoalesceWindowRow[],
    snapshot: DefinitionRow,
    deadline: Date,
  ): Promise<'started' | 'duplicate'> {
    let answer: 'started' | 'duplicate' = 'duplicate';
    for (const window of windows) {
      const woken = await coalescing!.starter.wake(
        {
          workflowId: window.workflowId,
          windowId: window.id,
          activityId: snapshot.id,
          activityName: snapshot.name,
          key: window.key,
          kind: 'batch',
        },
        { deadline },
      );
      if (woken === 'started') answer = 'started';
    }
    return answer;
  }

  /**
   * Starts every pending route of one event. Never throws: a route that
   * could not be started stays pending, and the failure is returned.
   * `snapshots` are definition versions already in hand; `checkRecorded`
   * looks for a recorded run before asking Temporal.
   */
  async function startRuns(
    envelope: EventEnvelope,
    routes: readonly EventRouteRow[],
    hops: number,
    known: { snapshots?: ReadonlyMap<string, DefinitionRow>; checkRecorded: boolean; attempt: number },
  ): Promise<StartedRuns> {
    const outcomes = new Map<string, RouteOutcome>();
    const settled: RouteSettlement[] = [];
    for (const route of routes) outcomes.set(route.activityId, route.outcome as RouteOutcome);
    /** A route whose run cannot be started, settled a dead letter (docs/recovery.md, "Dead letters"). */
    const deadLetter = (route: EventRouteRow, reason: DeadLetterRouteReason, detail: string): undefined => {
      settled.push({ activityId: route.activityId, outcome: 'dead_letter', reason, detail });
      outcomes.set(route.activityId, 'dead_letter');
      logger.warn({ eventId: envelope.event_id, workflowId: route.workflowId, reason, detail }, 'route dead-lettered');
      return undefined;
    };
    const failed: EventRouteRow[] = [];
    let failure = await deliverPending({
      rows: routes.filter((route) => route.outcome === 'pending'),
      gate: ctx.gate,
      timeouts: ctx.timeouts,
      prepare: async (route) => {
        let snapshot = known.snapshots?.get(route.activityId);
        if (snapshot?.version !== route.activityVersion) snapshot = undefined;
        snapshot ??= await deps.definitions.getVersion(route.activityId, route.activityVersion);
        if (snapshot === undefined)
          return deadLetter(
            route,
            'definition_deleted',
            `activity ${route.activityId} version ${route.activityVersion} is missing`,
          );
        // A route that names a batch's run (the event that closed the batch) is settled by the batch: never `duplicate`.
        if (
          known.checkRecorded &&
          parseBatchRunWorkflowId(route.workflowId) === undefined &&
          (await deps.runs.getRunByWorkflowId(route.workflowId)) !== undefined
        ) {
          settled.push({ activityId: route.activityId, outcome: 'duplicate' });
          outcomes.set(route.activityId, 'duplicate');
          logger.info({ eventId: envelope.event_id, workflowId: route.workflowId }, 'run already recorded (duplicate)');
          return undefined;
        }
        if (known.checkRecorded && (await deps.isDeleted?.(route.activityId)) === true)
          return deadLetter(route, 'definition_deleted', 'the activity was deleted before its run was started');
        const joined = await joinWindow(envelope, route, snapshot, outcomes);
        if (joined === 'done') return undefined;
        if (joined !== undefined && 'wake' in joined)
          return { route, snapshot, window: undefined, wake: joined.wake, notBefore: undefined };
        if (joined !== undefined) return { route, snapshot, window: joined, wake: undefined, notBefore: undefined };
        // Pacing (docs/pacing.md; a definition has pacing or debounce, not both): decided once per route and stored on it, so a redispatch reuses the decision.
        const definition = snapshot.definition as ActivityDefinition;
        const pacing = pacingRequestFor(definition, envelope, {
          eventId: envelope.event_id,
          activityId: route.activityId,
        });
        if (pacing === undefined) return { route, snapshot, window: undefined, wake: undefined, notBefore: undefined };
        if (deps.pacing === undefined)
          throw new Error(`activity ${route.activityId} is paced, but this ingest has no pacing store`);
        const decision = await deps.pacing.decide(pacing);
        if (decision.kind === 'settled') {
          outcomes.set(route.activityId, decision.outcome as RouteOutcome);
          return undefined;
        }
        if (decision.fresh)
          deps.onPaced?.(
            snapshot.name,
            decision.kind === 'dropped' ? 'rate_limit' : decision.notBefore === undefined ? undefined : 'throttle',
          );
        if (decision.kind === 'dropped') {
          outcomes.set(route.activityId, 'dropped');
          logger.info(
            { eventId: envelope.event_id, workflowId: route.workflowId, detail: decision.detail },
            'run dropped by rate limit',
          );
          return undefined;
        }
        return { route, snapshot, window: undefined, wake: undefined, notBefore: decision.notBefore };
      },
      call: refusalsAsAnswers(failed, ({ route, snapshot, window, wake, notBefore }, deadline) =>
        withTimeout(
          wake !== undefined
            ? wakeBatches(wake, snapshot, deadline)
            : window !== undefined
              ? coalescing!.starter.start(
                  {
                    workflowId: window.workflowId,
                    windowId: window.id,
                    activityId: snapshot.id,
                    activityName: snapshot.name,
                    key: window.key,
                  },
                  { deadline },
                )
              : deps.starter.start(
                  {
                    workflowId: route.workflowId,
                    activity: {
                      id: snapshot.id,
                      name: snapshot.name,
                      version: snapshot.version,
                      definition: snapshot.definition as ActivityDefinition,
                    },
                    // The hop count rides along only when non-zero, so runs of external events keep their input shape.
                    trigger: { type: 'event', event: envelope, ...(hops > 0 ? { hops } : {}) },
                  },
                  { deadline, ...(notBefore === undefined ? {} : { notBefore }) },
                ),
          // A backstop only: the deadline above normally ends the call first.
          deadline.getTime() - Date.now() + 2_000,
          'starting the run workflow',
        ),
      ),
      settle: async ({ route, window, wake }, outcome) => {
        if (typeof outcome === 'object') {
          deadLetter(route, 'start_refused', `Temporal refused the start: ${outcome.refused}`);
          return;
        }
        if (wake !== undefined) {
          // Its batch's workflow runs (or was woken to start the batch's run): the event waits in its batch.
          settled.push({ activityId: route.activityId, outcome: 'coalescing' });
          outcomes.set(route.activityId, 'coalescing');
          logger.info(
            { eventId: envelope.event_id, batchWorkflowIds: wake.map((w) => w.workflowId), outcome },
            'batch workflows started or woken',
          );
          return;
        }
        if (window !== undefined) {
          // The window's workflow runs: the event waits in its window (coalescing) like every later member.
          settled.push({ activityId: route.activityId, outcome: 'coalescing' });
          outcomes.set(route.activityId, 'coalescing');
          logger.info(
            { eventId: envelope.event_id, windowWorkflowId: window.workflowId, outcome },
            'debounce window opened',
          );
          return;
        }
        settled.push({ activityId: route.activityId, outcome });
        outcomes.set(route.activityId, outcome);
        logger.info(
          { eventId: envelope.event_id, workflowId: route.workflowId, outcome },
          outcome === 'started' ? 'run started' : 'run already existed (duplicate)',
        );
      },
      logger,
      logFields: (route) => ({ eventId: envelope.event_id, workflowId: route.workflowId }),
      messages: {
        deferred: 'Temporal is unreachable; routing deferred until it answers',
        notCalled: 'routing failed; the dispatcher will retry',
        notSettled: 'routing failed; the dispatcher will retry',
      },
      failure: undefined,
    });
    // The routing retry budget: failed starts past it are dead letters, and the event no longer waits for them.
    const spent = failed.map((route) => ({
      route,
      detail: budgetExhausted(deps.routingBudget, failure, known.attempt, route.updatedAt, new Date()),
    }));
    for (const { route, detail } of spent)
      if (detail !== undefined) deadLetter(route, 'retry_budget_exhausted', detail);
    // Nothing left for a retry to do (every route settled, dead letters included): the event is routed.
    if (spent.some(({ detail }) => detail !== undefined) && ![...outcomes.values()].includes('pending'))
      failure = undefined;
    return { outcomes, settled, failure };
  }

  return {
    /**
     * The inline dispatch of a just-accepted event. Never throws: routes that
     * could not be started stay pending for the dispatcher.
     */
    async dispatchAccepted(
      envelope: EventEnvelope,
      accepted: Extract<Accepted, { kind: 'accepted' }>,
      hops: number,
    ): Promise<Map<string, RouteOutcome>> {
      const started = await startRuns(envelope, accepted.routes, hops, {
        snapshots: accepted.snapshots,
        checkRecorded: false,
        attempt: 1,
      });
      // Stored as routed already (no route needed Temporal): nothing to record.
      if (accepted.storedRouted) return started.outcomes;
      await settle(envelope, started.settled, started.failure, {
        attempt: 1,
        quick: true,
        definitions: accepted.index,
        waitsOpen: accepted.waitsOpen,
      });
      return started.outcomes;
    },

    /**
     * The dispatcher's retry of a pending event (its `attempt`-th). Never
     * throws: routes that could not be started stay pending, and the event
     * is given a retry time.
     */
    async redispatch(
      envelope: EventEnvelope,
      routes: EventRouteRow[],
      attempt = 1,
      hops = 0,
    ): Promise<Map<string, RouteOutcome>> {
      const started = await startRuns(envelope, routes, hops, { checkRecorded: true, attempt });
      await settle(envelope, started.settled, started.failure, {
        attempt,
        quick: false,
        definitions: () => ctx.definitionCache.current(),
        waitsOpen: false,
      });
      return started.outcomes;
    },
  };
}
