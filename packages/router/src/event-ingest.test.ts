/**
 * Unit tests of the ingest's routing logic, over small in-memory fakes of
 * exactly the dependencies it takes (EventIngestDeps). They prove what the
 * ingest decides and asks for — which routes, which starts, what is recorded
 * when a start fails — not what Postgres or Temporal do with it: the
 * `*.int.test.ts` files in test/ prove that against the real services.
 */
import { randomUUID } from 'node:crypto';
import {
  ActivityDefinition,
  EventIdReusedError,
  InvalidInputError,
  eventRunWorkflowId,
  runIdFor,
  type EventEnvelope,
} from '@activity-core/contracts';
import type { DefinitionRow, EventRouteRow, EventRow, NewRoute, RunRow } from '@activity-core/db';
import type { RunStarter, StartRunRequest } from '@activity-core/temporal/client';
import { describe, expect, test } from 'vitest';
import { createAvailabilityGate } from './availability-gate';
import { createEventIngest, routingBackoffMs, StoreUnreachableError, type EventIngestDeps } from './event-ingest';

type StartAnswer = 'started' | 'duplicate' | Error;

/** The definitions the ingest may read: enabled rows (and disabled ones that hold events) and their versions. */
function fakeDefinitions(rows: DefinitionRow[]): EventIngestDeps['definitions'] {
  return {
    // No change counter: the ingest reloads on every event, so a test may add rows at any time.
    currentVersion: async () => undefined,
    listRoutable: async () => rows.filter((row) => row.enabled || row.definition.when_disabled?.action === 'hold'),
    getVersion: async (id, version) => rows.find((row) => row.id === id && row.version === version),
  };
}

/**
 * The event store with the repository's semantics in miniature: one
 * transaction stores the event with its routes (routed at once when no route
 * is pending), a redelivery with the same fingerprint is a duplicate, a
 * settled route never goes back to pending, and an event is marked routed
 * only when none of its routes is pending.
 */
function fakeEvents(recordedRuns: ReadonlySet<string> = new Set()) {
  const stored = new Map<string, { event: EventRow; routes: EventRouteRow[] }>();
  // The webhook sources' change counter, as the accept statement compares it (`webhookSourcesVersion`).
  const sources = { version: 1n, changeOnEveryAccept: false, acceptsChecked: [] as Array<bigint | undefined> };
  const failures: Array<{ eventId: string; message: string; retryInMs: number }> = [];
  const markCalls: string[] = [];
  const repo: EventIngestDeps['events'] = {
    async accept(input) {
      if (sources.changeOnEveryAccept) sources.version++;
      sources.acceptsChecked.push(input.webhookSourcesVersion);
      if (input.webhookSourcesVersion !== undefined && input.webhookSourcesVersion !== sources.version)
        return { kind: 'stale_webhook_sources' };
      const existing = stored.get(input.envelope.event_id);
      if (existing !== undefined) {
        if (existing.event.fingerprint !== input.fingerprint)
          return { kind: 'fingerprint_mismatch', event: existing.event };
        return { kind: 'duplicate', event: existing.event, routes: existing.routes };
      }
      const now = new Date();
      const settled = input.routes.every((route) => (route.outcome ?? 'pending') !== 'pending');
      const event: EventRow = {
        eventId: input.envelope.event_id,
        source: input.envelope.source,
        eventType: input.envelope.event_type,
        subject: input.envelope.subject ?? null,
        occurredAt: new Date(input.envelope.occurred_at),
        payload: input.envelope,
        fingerprint: input.fingerprint,
        idOrigin: input.idOrigin,
        receivedAt: now,
        routingState: settled ? 'routed' : 'pending',
        routingAttempts: 0,
        nextAttemptAt: now,
        routedAt: settled ? now : null,
        lastError: null,
        credential: input.credential ?? null,
        hops: input.hops ?? 0,
        payloadExpiredAt: null,
      };
      const routes = input.routes.map((route: NewRoute): EventRouteRow => ({
        ...route,
        eventId: input.envelope.event_id,
        windowId: null,
        windowPosition: null,
        reasonCode: null,
        deadLetterCount: 0,
        deadLetteredAt: null,
        discardedAt: null,
        discardedBy: null,
        // As the accept statement does: a pending route whose run is already recorded is a duplicate at once.
        outcome:
          (route.outcome ?? 'pending') === 'pending' && recordedRuns.has(route.workflowId)
            ? 'duplicate'
            : (route.outcome ?? 'pending'),
        detail: route.detail ?? null,
        expiresAt: route.expiresAt ?? null,
        pacedAt: null,
        notBefore: null,
        createdAt: now,
        updatedAt: now,
      }));
      stored.set(event.eventId, { event, routes });
      return { kind: 'accepted', event, routes };
    },
    async settle(eventId, outcomes, failure) {
      const entry = stored.get(eventId);
      for (const settlement of outcomes) {
        const route = entry?.routes.find((r) => r.activityId === settlement.activityId && r.outcome === 'pending');
        if (route === undefined) continue;
        route.outcome = settlement.outcome;
        if (settlement.outcome === 'dead_letter') {
          route.reasonCode = settlement.reason;
          route.detail = settlement.detail;
        }
      }
      if (failure !== undefined) {
        failures.push({ eventId, ...failure });
        if (entry !== undefined && entry.event.routingState === 'pending') entry.event.lastError = failure.message;
        return false;
      }
      markCalls.push(eventId);
      if (
        entry === undefined ||
        entry.event.routingState !== 'pending' ||
        entry.routes.some((r) => r.outcome === 'pending')
      )
        return false;
      entry.event.routingState = 'routed';
      entry.event.lastError = null;
      return true;
    },
  };
  return {
    repo,
    sources,
    failures,
    markCalls,
    event: (eventId: string) => stored.get(eventId)?.event,
    routes: (eventId: string) => stored.get(eventId)?.routes ?? [],
    outcomes: (eventId: string) =>
      Object.fromEntries((stored.get(eventId)?.routes ?? []).map((r) => [r.activityName, r.outcome])),
  };
}

/** The run starter: answers from a script, per workflow id, and records every request. */
function fakeStarter(answer: (request: StartRunRequest) => StartAnswer = () => 'started') {
  const requests: StartRunRequest[] = [];
  const starter: RunStarter = {
    async start(request) {
      requests.push(request);
      const outcome = answer(request);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  };
  return { starter, requests };
}

/** The run records: the workflow ids of runs already recorded. */
function fakeRuns(recorded: Set<string> = new Set()): EventIngestDeps['runs'] {
  return {
    getRunByWorkflowId: async (workflowId) => (recorded.has(workflowId) ? ({ workflowId } as RunRow) : undefined),
  };
}

const quietLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** gRPC UNAVAILABLE, as the Temporal client reports a server it cannot reach. */
const unreachable = () => Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });

function definitionRow(name: string, triggers: unknown[]): DefinitionRow {
  const now = new Date();
  return {
    id: randomUUID(),
    name,
    version: 1,
    enabled: true,
    definition: ActivityDefinition.parse({ name, triggers, tasks: [{ type: 'noop' }] }),
    createdAt: now,
    updatedAt: now,
    deletedAt: null,
  };
}

function envelope(overrides: Partial<EventEnvelope> = {}): EventEnvelope {
  return {
    event_id: `evt-${randomUUID()}`,
    event_type: 'order.paid',
    source: 'shop',
    occurred_at: '2026-03-01T09:00:00.000Z',
    data: { amount: 250 },
    ...overrides,
  };
}

function setup(
  rows: DefinitionRow[],
  options: {
    answer?: (request: StartRunRequest) => StartAnswer;
    recordedRuns?: Set<string>;
    deps?: Pick<EventIngestDeps, 'routingBudget' | 'isDeleted'>;
  } = {},
) {
  const events = fakeEvents(options.recordedRuns);
  const { starter, requests } = fakeStarter(options.answer);
  const gate = createAvailabilityGate();
  const ingest = createEventIngest({
    definitions: fakeDefinitions(rows),
    events: events.repo,
    starter,
    runs: fakeRuns(options.recordedRuns),
    logger: quietLogger,
    gate,
    ...options.deps,
  });
  return { ingest, events, requests, gate };
}

describe('routing an accepted event to the definitions it matches', () => {
  test('an event matching an enabled definition gets one route, its run is started with the deterministic id, and the event is settled', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, requests } = setup([paid]);
    const event = envelope();

    const answer = await ingest.ingest(event, 'body');

    const workflowId = eventRunWorkflowId(paid.id, event.event_id);
    expect(answer).toMatchObject({ event_id: event.event_id, status: 'accepted', filtered: [] });
    expect(answer.runs).toEqual([
      {
        activity_id: paid.id,
        activity_name: 'on-paid',
        workflow_id: workflowId,
        run_id: runIdFor(workflowId),
        status: 'started',
      },
    ]);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      workflowId,
      activity: { id: paid.id, version: 1 },
      trigger: { type: 'event', event },
    });
    expect(events.outcomes(event.event_id)).toEqual({ 'on-paid': 'started' });
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });

  test('definitions whose type, source or enabled flag do not match get no route and no run', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const wildcard = definitionRow('on-any-order', [{ type: 'event', event_type: 'order.*', source: 'shop' }]);
    const otherType = definitionRow('on-refund', [{ type: 'event', event_type: 'order.refunded' }]);
    const otherSource = definitionRow('on-billing-paid', [
      { type: 'event', event_type: 'order.paid', source: 'billing' },
    ]);
    const disabled = { ...definitionRow('disabled', [{ type: 'event', event_type: 'order.paid' }]), enabled: false };
    const cronOnly = definitionRow('nightly', [{ type: 'cron', cron: '0 3 * * *' }]);
    const { ingest, events, requests } = setup([paid, wildcard, otherType, otherSource, disabled, cronOnly]);
    const event = envelope();

    const answer = await ingest.ingest(event, 'body');

    expect(answer.runs.map((run) => run.activity_name)).toEqual(['on-paid', 'on-any-order']);
    expect(requests.map((request) => request.activity.name)).toEqual(['on-paid', 'on-any-order']);
    expect(events.outcomes(event.event_id)).toEqual({ 'on-paid': 'started', 'on-any-order': 'started' });
  });

  test('an event no definition matches is stored settled with an empty decision log and starts nothing', async () => {
    const { ingest, events, requests } = setup([
      definitionRow('on-refund', [{ type: 'event', event_type: 'order.refunded' }]),
    ]);
    const event = envelope();

    const answer = await ingest.ingest(event, 'assigned');

    expect(answer).toMatchObject({ status: 'accepted', event_id_assigned: true, runs: [], filtered: [] });
    expect(requests).toEqual([]);
    expect(events.routes(event.event_id)).toEqual([]);
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });

  test('a filter that rejects the event is recorded in the decision log as filtered, with the filter, and starts no run', async () => {
    const big = definitionRow('big-orders', [
      { type: 'event', event_type: 'order.paid', filter: 'data.amount > 1000' },
    ]);
    const any = definitionRow('all-orders', [{ type: 'event', event_type: 'order.paid', filter: 'data.amount > 100' }]);
    const { ingest, events, requests } = setup([big, any]);
    const event = envelope({ data: { amount: 250 } });

    const answer = await ingest.ingest(event, 'body');

    expect(answer.runs.map((run) => [run.activity_name, run.status])).toEqual([['all-orders', 'started']]);
    expect(answer.filtered).toEqual([
      {
        activity_id: big.id,
        activity_name: 'big-orders',
        status: 'filtered',
        detail: 'filter `data.amount > 1000` is false',
      },
    ]);
    expect(requests.map((request) => request.activity.name)).toEqual(['all-orders']);
    const route = events.routes(event.event_id).find((r) => r.activityId === big.id);
    expect(route).toMatchObject({
      outcome: 'filtered',
      detail: 'filter `data.amount > 1000` is false',
      workflowId: eventRunWorkflowId(big.id, event.event_id),
    });
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });

  test('a filter that fails on the event is recorded as filter_error with the reason, and the event still settles', async () => {
    const gold = definitionRow('gold-customers', [
      { type: 'event', event_type: 'order.paid', filter: 'data.customer.tier == "gold"' },
    ]);
    const { ingest, events, requests } = setup([gold]);
    const event = envelope({ data: { amount: 5 } });

    const answer = await ingest.ingest(event, 'body');

    expect(answer.runs).toEqual([]);
    expect(answer.filtered).toEqual([
      {
        activity_id: gold.id,
        activity_name: 'gold-customers',
        status: 'filter_error',
        detail: expect.stringContaining('filter `data.customer.tier == "gold"` failed: '),
      },
    ]);
    expect(requests).toEqual([]);
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });
});

describe('duplicates', () => {
  test('a redelivered event starts nothing and answers duplicate for every run the first delivery matched', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, requests } = setup([paid]);
    const event = envelope();
    await ingest.ingest(event, 'body');

    const again = await ingest.ingest(event, 'body');

    expect(again.status).toBe('duplicate');
    expect(again.runs.map((run) => [run.activity_name, run.status])).toEqual([['on-paid', 'duplicate']]);
    expect(requests).toHaveLength(1);
  });

  test("a redelivery answers with the first delivery's decision, even for a definition registered since", async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const rows = [paid];
    const { ingest, requests } = setup(rows);
    const event = envelope();
    await ingest.ingest(event, 'body');
    rows.push(definitionRow('registered-later', [{ type: 'event', event_type: 'order.paid' }]));

    const again = await ingest.ingest(event, 'body');

    expect(again.runs.map((run) => run.activity_name)).toEqual(['on-paid']);
    expect(requests).toHaveLength(1);
  });

  test('the same event id with different content is refused as a reused id', async () => {
    const { ingest } = setup([definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }])]);
    const event = envelope();
    await ingest.ingest(event, 'body');

    await expect(ingest.ingest({ ...event, data: { amount: 1 } }, 'body')).rejects.toBeInstanceOf(EventIdReusedError);
  });

  test('a route whose run is already recorded is a duplicate without asking Temporal', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const event = envelope();
    const { ingest, events, requests } = setup([paid], {
      recordedRuns: new Set([eventRunWorkflowId(paid.id, event.event_id)]),
    });

    const answer = await ingest.ingest(event, 'body');

    expect(answer.runs.map((run) => run.status)).toEqual(['duplicate']);
    expect(requests).toEqual([]);
    expect(events.outcomes(event.event_id)).toEqual({ 'on-paid': 'duplicate' });
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });

  test('a start Temporal answers with "already started" records the route as duplicate and settles the event', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, requests } = setup([paid], { answer: () => 'duplicate' });
    const event = envelope();

    const answer = await ingest.ingest(event, 'body');

    expect(requests).toHaveLength(1);
    expect(answer.runs.map((run) => run.status)).toEqual(['duplicate']);
    expect(events.outcomes(event.event_id)).toEqual({ 'on-paid': 'duplicate' });
    expect(events.event(event.event_id)?.routingState).toBe('routed');
    expect(events.failures).toEqual([]);
  });
});

describe('when a start does not succeed', () => {
  test('Temporal unreachable: the route stays pending, the event is left to the dispatcher soon, and the answer says pending', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, gate } = setup([paid], { answer: () => unreachable() });
    const event = envelope();

    const answer = await ingest.ingest(event, 'body');

    expect(answer.status).toBe('accepted');
    expect(answer.runs.map((run) => run.status)).toEqual(['pending']);
    expect(events.outcomes(event.event_id)).toEqual({ 'on-paid': 'pending' });
    expect(events.event(event.event_id)).toMatchObject({
      routingState: 'pending',
      lastError: '14 UNAVAILABLE: No connection established',
    });
    expect(events.failures).toEqual([
      { eventId: event.event_id, message: '14 UNAVAILABLE: No connection established', retryInMs: expect.any(Number) },
    ]);
    // Retried at the gate's next probe, not after the per-event backoff for refusals.
    expect(events.failures[0]!.retryInMs).toBeLessThan(routingBackoffMs(1));
    expect(gate.healthy).toBe(false);
  });

  test('while Temporal is known unreachable, the next event is not sent to it: its route is left pending at once', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, requests } = setup([paid], { answer: () => unreachable() });
    await ingest.ingest(envelope(), 'body');
    const second = envelope();

    const answer = await ingest.ingest(second, 'body');

    expect(requests).toHaveLength(1);
    expect(answer.runs.map((run) => run.status)).toEqual(['pending']);
    expect(events.failures.at(-1)).toMatchObject({
      eventId: second.event_id,
      message: 'Temporal is unreachable; routing deferred until it answers',
    });
  });

  test('a start Temporal refuses leaves the route pending with the per-event backoff, and Temporal counts as reachable', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, gate } = setup([paid], {
      answer: () => new Error('3 INVALID_ARGUMENT: something Temporal refused'),
    });
    const event = envelope();

    const answer = await ingest.ingest(event, 'body');

    expect(answer.runs.map((run) => run.status)).toEqual(['pending']);
    expect(events.failures).toEqual([
      {
        eventId: event.event_id,
        message: '3 INVALID_ARGUMENT: something Temporal refused',
        retryInMs: routingBackoffMs(1),
      },
    ]);
    expect(gate.healthy).toBe(true);
  });

  test('a retry whose definition version is missing makes that route a dead letter (definition_deleted) and still starts the other routes', async () => {
    const gone = definitionRow('gone', [{ type: 'event', event_type: 'order.paid' }]);
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const events = fakeEvents();
    let refuse = true;
    const { starter, requests } = fakeStarter(() => (refuse ? new Error('9 FAILED_PRECONDITION: not now') : 'started'));
    const definitions = fakeDefinitions([gone, paid]);
    const ingest = createEventIngest({
      definitions: {
        ...definitions,
        getVersion: async (id, version) => (id === gone.id ? undefined : definitions.getVersion(id, version)),
      },
      events: events.repo,
      starter,
      runs: fakeRuns(),
      logger: quietLogger,
    });
    const event = envelope();
    // The first delivery starts its runs on the definitions it was matched against (no version read); Temporal refuses both.
    await ingest.ingest(event, 'body');
    expect(requests.map((request) => request.activity.name)).toEqual(['gone', 'on-paid']);

    // The dispatcher's retry reads each route's definition version.
    refuse = false;
    const outcomes = await ingest.dispatch(event, events.routes(event.event_id), 2);

    expect(Object.fromEntries(outcomes)).toEqual({ [gone.id]: 'dead_letter', [paid.id]: 'started' });
    expect(requests.map((request) => request.activity.name)).toEqual(['gone', 'on-paid', 'on-paid']);
    expect(events.routes(event.event_id).find((route) => route.activityId === gone.id)).toMatchObject({
      outcome: 'dead_letter',
      reasonCode: 'definition_deleted',
      detail: `activity ${gone.id} version 1 is missing`,
    });
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });
});

/** gRPC INVALID_ARGUMENT, as Temporal answers a start it refuses for good (an input over its payload limit). */
const invalidArgument = () =>
  Object.assign(new Error('3 INVALID_ARGUMENT: Blob data size exceeds limit.'), {
    code: 3,
    details: 'Blob data size exceeds limit.',
  });
/** gRPC INTERNAL: Temporal answered, with a failure that may pass. */
const internal = () => Object.assign(new Error('13 INTERNAL: persistence failure'), { code: 13 });

describe('dead letters: routes whose run cannot be started', () => {
  test('a start Temporal refuses for good is a dead letter (start_refused) at once, and the event is settled, not retried', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, gate, requests } = setup([paid], { answer: invalidArgument });
    const event = envelope();

    const answer = await ingest.ingest(event, 'body');

    expect(answer.runs.map((run) => run.status)).toEqual(['dead_letter']);
    // A redelivery is answered with what became of it, not `duplicate`.
    expect((await ingest.ingest(event, 'body')).runs.map((run) => run.status)).toEqual(['dead_letter']);
    expect(requests).toHaveLength(1);
    expect(events.routes(event.event_id)[0]).toMatchObject({
      outcome: 'dead_letter',
      reasonCode: 'start_refused',
      detail: 'Temporal refused the start: 3 INVALID_ARGUMENT: Blob data size exceeds limit.',
    });
    expect(events.failures).toEqual([]);
    expect(events.event(event.event_id)?.routingState).toBe('routed');
    expect(gate.healthy).toBe(true);
  });

  test('a start refused again and again stays pending until the attempt budget, then is a dead letter (retry_budget_exhausted)', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events } = setup([paid], {
      answer: internal,
      deps: { routingBudget: { maxAttempts: 3, maxAgeMs: 86_400_000 } },
    });
    const event = envelope();
    await ingest.ingest(event, 'body');
    await ingest.dispatch(event, events.routes(event.event_id), 2);
    expect(events.routes(event.event_id)[0]?.outcome).toBe('pending');

    await ingest.dispatch(event, events.routes(event.event_id), 3);

    expect(events.routes(event.event_id)[0]).toMatchObject({
      outcome: 'dead_letter',
      reasonCode: 'retry_budget_exhausted',
    });
    expect(events.routes(event.event_id)[0]?.detail).toBe(
      'routing retry budget spent after 3 attempts (ROUTING_RETRY_MAX_ATTEMPTS=3); last failure: 13 INTERNAL: persistence failure',
    );
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });

  test('a route pending longer than the age budget is a dead letter at its next refused attempt', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events } = setup([paid], {
      answer: internal,
      deps: { routingBudget: { maxAttempts: 100, maxAgeMs: 60_000 } },
    });
    const event = envelope();
    await ingest.ingest(event, 'body');
    const [route] = events.routes(event.event_id);
    if (route === undefined) throw new Error('no route');
    route.updatedAt = new Date(Date.now() - 61_000);

    await ingest.dispatch(event, events.routes(event.event_id), 2);

    expect(route).toMatchObject({ outcome: 'dead_letter', reasonCode: 'retry_budget_exhausted' });
    expect(route.detail).toMatch(
      /^routing retry budget spent after 6\d s pending \(ROUTING_RETRY_MAX_AGE_SECONDS=60\)/,
    );
  });

  test('a route past the budget is a dead letter while another route Temporal did not answer keeps the event pending', async () => {
    const refused = definitionRow('refused', [{ type: 'event', event_type: 'order.paid' }]);
    const waiting = definitionRow('waiting', [{ type: 'event', event_type: 'order.paid' }]);
    let attempt = 1;
    const { ingest, events } = setup([refused, waiting], {
      // Both refused at the first attempt; at the second, Temporal does not answer for `waiting` (after refusing `refused`).
      answer: (request) => (request.activity.id === waiting.id && attempt === 2 ? unreachable() : internal()),
      deps: { routingBudget: { maxAttempts: 2, maxAgeMs: 86_400_000 } },
    });
    const event = envelope();
    await ingest.ingest(event, 'body');
    expect(events.outcomes(event.event_id)).toEqual({ refused: 'pending', waiting: 'pending' });
    attempt = 2;

    await ingest.dispatch(event, events.routes(event.event_id), 2);

    expect(events.outcomes(event.event_id)).toEqual({ refused: 'dead_letter', waiting: 'pending' });
    expect(events.event(event.event_id)?.routingState).toBe('pending');
    expect(events.failures.at(-1)?.eventId).toBe(event.event_id);
  });

  test('an unreachable Temporal never spends the budget: an outage makes no dead letters', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events } = setup([paid], {
      answer: unreachable,
      deps: { routingBudget: { maxAttempts: 1, maxAgeMs: 60_000 } },
    });
    const event = envelope();
    await ingest.ingest(event, 'body');

    await ingest.dispatch(event, events.routes(event.event_id), 50);

    expect(events.routes(event.event_id)[0]?.outcome).toBe('pending');
    expect(events.event(event.event_id)?.routingState).toBe('pending');
  });

  test("the dispatcher's retry of a deleted activity's route makes it a dead letter (definition_deleted) without a start", async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events, requests } = setup([paid], {
      answer: unreachable,
      deps: { isDeleted: async (activityId) => activityId === paid.id },
    });
    const event = envelope();
    await ingest.ingest(event, 'body');

    await ingest.dispatch(event, events.routes(event.event_id), 2);

    expect(requests).toHaveLength(1);
    expect(events.routes(event.event_id)[0]).toMatchObject({
      outcome: 'dead_letter',
      reasonCode: 'definition_deleted',
    });
    expect(events.event(event.event_id)?.routingState).toBe('routed');
  });
});

describe('settling an event', () => {
  test('an event is marked routed only once every route is settled: a later dispatch starts only the pending route', async () => {
    const first = definitionRow('first', [{ type: 'event', event_type: 'order.paid' }]);
    const second = definitionRow('second', [{ type: 'event', event_type: 'order.paid' }]);
    let refuseSecond = true;
    const { ingest, events, requests } = setup([first, second], {
      answer: (request) =>
        refuseSecond && request.activity.id === second.id ? new Error('9 FAILED_PRECONDITION: not now') : 'started',
    });
    const event = envelope();

    await ingest.ingest(event, 'body');
    expect(events.outcomes(event.event_id)).toEqual({ first: 'started', second: 'pending' });
    expect(events.event(event.event_id)?.routingState).toBe('pending');
    expect(events.markCalls).toEqual([]);

    // The dispatcher's retry: the stored routes, attempt 2.
    refuseSecond = false;
    const outcomes = await ingest.dispatch(event, events.routes(event.event_id), 2);

    expect(Object.fromEntries(outcomes)).toEqual({ [first.id]: 'started', [second.id]: 'started' });
    expect(requests.map((request) => request.activity.name)).toEqual(['first', 'second', 'second']);
    expect(events.markCalls).toEqual([event.event_id]);
    expect(events.event(event.event_id)).toMatchObject({ routingState: 'routed', lastError: null });
  });

  test('a retry that fails again backs off by its attempt number', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const { ingest, events } = setup([paid], { answer: () => new Error('refused') });
    const event = envelope();
    await ingest.ingest(event, 'body');

    await ingest.dispatch(event, events.routes(event.event_id), 4);

    expect(events.failures.map((failure) => failure.retryInMs)).toEqual([routingBackoffMs(1), routingBackoffMs(4)]);
    expect(routingBackoffMs(4)).toBe(8_000);
  });

  test('a lost "mark routed" write is not an error: the answer stands and the dispatcher settles the event later', async () => {
    const paid = definitionRow('on-paid', [{ type: 'event', event_type: 'order.paid' }]);
    const events = fakeEvents();
    const { starter } = fakeStarter();
    const ingest = createEventIngest({
      definitions: fakeDefinitions([paid]),
      events: { ...events.repo, settle: async () => Promise.reject(new Error('connection terminated')) },
      starter,
      runs: fakeRuns(),
      logger: quietLogger,
    });

    const answer = await ingest.ingest(envelope(), 'body');

    expect(answer.runs.map((run) => run.status)).toEqual(['started']);
  });
});

describe('the webhook sources check made with the accept', () => {
  const refused = new InvalidInputError('source "partner" is reserved', [{ path: 'source', message: 'reserved' }]);

  test('an event checked against sources that changed since is checked again, then stored on the new check', async () => {
    const { ingest, events } = setup([]);
    events.sources.version = 2n;
    let rechecks = 0;
    const event = envelope();

    const answer = await ingest.ingest(event, 'body', {
      webhookSourcesCheck: { version: 1n, recheck: async () => (rechecks++, 2n) },
    });

    expect(answer.status).toBe('accepted');
    expect(rechecks).toBe(1);
    expect(events.sources.acceptsChecked).toEqual([1n, 2n]);
  });

  test('a re-check that refuses the event is the answer, and nothing is stored', async () => {
    const { ingest, events } = setup([]);
    events.sources.version = 2n;
    const event = envelope();

    await expect(
      ingest.ingest(event, 'body', {
        webhookSourcesCheck: {
          version: 1n,
          recheck: async () => {
            throw refused;
          },
        },
      }),
    ).rejects.toBe(refused);
    expect(events.event(event.event_id)).toBeUndefined();
  });

  test('sources that change before every accept: after five re-checks the event is stored on the last check made', async () => {
    const { ingest, events } = setup([]);
    events.sources.changeOnEveryAccept = true;
    let rechecks = 0;
    const event = envelope();

    const answer = await ingest.ingest(event, 'body', {
      webhookSourcesCheck: { version: 1n, recheck: async () => (rechecks++, events.sources.version) },
    });

    expect(answer.status).toBe('accepted');
    expect(rechecks).toBe(5);
    expect(events.sources.acceptsChecked.at(-1)).toBeUndefined();
    expect(events.sources.acceptsChecked).toHaveLength(6);
  });
});

describe('Postgres unreachable during the accept', () => {
  const socketError = (code: string, message: string) => Object.assign(new Error(message), { code });

  test.each([
    ['a connection that could not be opened', socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), true],
    ['a connection lost during the statement', socketError('ECONNRESET', 'read ECONNRESET'), false],
  ])('%s: the 503 says whether the event may have been stored', async (_, error, nothing) => {
    const events = fakeEvents();
    const { starter } = fakeStarter();
    const ingest = createEventIngest({
      definitions: fakeDefinitions([]),
      events: { ...events.repo, accept: async () => Promise.reject(error) },
      starter,
      runs: fakeRuns(),
      logger: quietLogger,
    });

    const failure = await ingest.ingest(envelope(), 'body').catch((caught: unknown) => caught);

    expect(failure).toBeInstanceOf(StoreUnreachableError);
    expect((failure as StoreUnreachableError).nothingStored).toBe(nothing);
  });
});
