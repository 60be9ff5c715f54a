import { eventRunWorkflowId, runIdFor, type EventEnvelope, type Trigger } from '@activity-core/contracts';
import type { EventRouteRow } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { buildDefinitionIndex } from './definition-index';
import {
  combineFailures,
  holdOf,
  ingestAnswer,
  matchRoutes,
  MIN_DEFERRED_RETRY_MS,
  retryPlan,
  routingBackoffMs,
  runStatusOf,
  storedRoutedAtAccept,
} from './ingest-plan';

const envelope: EventEnvelope = {
  event_id: 'e1',
  event_type: 'order.paid',
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { amount: 250 },
};

const [A1, A2, A3] = [
  '00000000-0000-4000-8000-0000000000a1',
  '00000000-0000-4000-8000-0000000000a2',
  '00000000-0000-4000-8000-0000000000a3',
];

const definition = (id: string, triggers: Trigger[]) => ({
  id,
  name: `activity ${id.slice(-2)}`,
  version: 3,
  definition: { triggers },
});

const route = (activityId: string, outcome: EventRouteRow['outcome'], detail?: string): EventRouteRow =>
  ({
    eventId: envelope.event_id,
    activityId,
    activityVersion: 3,
    activityName: `activity ${activityId.slice(-2)}`,
    workflowId: eventRunWorkflowId(activityId, envelope.event_id),
    runId: runIdFor(eventRunWorkflowId(activityId, envelope.event_id)),
    outcome,
    detail: detail ?? null,
  }) as EventRouteRow;

describe('matching an event to routes', () => {
  test('a matching activity gets a pending route naming its run, and its definition is kept for the start', () => {
    const index = buildDefinitionIndex([definition(A1, [{ type: 'event', event_type: 'order.paid' }])]);
    const { routes, snapshots } = matchRoutes(index, envelope);
    const workflowId = eventRunWorkflowId(A1, 'e1');
    expect(routes).toEqual([
      {
        activityId: A1,
        activityVersion: 3,
        activityName: 'activity a1',
        workflowId,
        runId: runIdFor(workflowId),
        outcome: 'pending',
      },
    ]);
    expect(snapshots.get(A1)?.id).toBe(A1);
  });

  test('a filtered activity gets a route with the filter named and no definition kept', () => {
    const index = buildDefinitionIndex([
      definition(A1, [{ type: 'event', event_type: 'order.paid', filter: 'data.amount > 1000' }]),
    ]);
    const { routes, snapshots } = matchRoutes(index, envelope);
    expect(routes).toHaveLength(1);
    expect(routes[0]).toMatchObject({ outcome: 'filtered', detail: 'filter `data.amount > 1000` is false' });
    expect(snapshots.size).toBe(0);
  });

  test('an activity whose triggers do not name the event type gets no route', () => {
    const index = buildDefinitionIndex([definition(A1, [{ type: 'event', event_type: 'order.refunded' }])]);
    expect(matchRoutes(index, envelope).routes).toEqual([]);
  });
});

describe('storing an event routed at accept', () => {
  test('an event with no pending route is stored routed', () => {
    expect(storedRoutedAtAccept([{ outcome: 'filtered' }], false)).toBe(true);
    expect(storedRoutedAtAccept([], false)).toBe(true);
  });

  test('an event with a pending route, or one a cancel_on names, is stored pending', () => {
    expect(storedRoutedAtAccept([{ outcome: 'filtered' }, { outcome: 'pending' }], false)).toBe(false);
    expect(storedRoutedAtAccept([], true)).toBe(false);
  });
});

describe('the answer to the caller', () => {
  test('runs carry their status and filtered activities their reason', () => {
    const answer = ingestAnswer(
      envelope,
      'assigned',
      'accepted',
      [route(A1, 'pending'), route(A2, 'filter_error', 'bad filter'), route(A3, 'started')],
      (row) => (row.activityId === A1 ? 'started' : 'pending'),
    );
    expect(answer).toEqual({
      event_id: 'e1',
      event_id_assigned: true,
      status: 'accepted',
      runs: [
        expect.objectContaining({ activity_id: A1, status: 'started' }),
        expect.objectContaining({ activity_id: A3, status: 'pending' }),
      ],
      filtered: [{ activity_id: A2, activity_name: 'activity a2', status: 'filter_error', detail: 'bad filter' }],
    });
  });

  test('a run Temporal has not answered for is pending', () => {
    expect(runStatusOf('started')).toBe('started');
    expect(runStatusOf('duplicate')).toBe('duplicate');
    expect(runStatusOf('pending')).toBe('pending');
    expect(runStatusOf(undefined)).toBe('pending');
  });

  test('a run whose start was refused for good is answered dead_letter, not pending', () => {
    expect(runStatusOf('dead_letter')).toBe('dead_letter');
  });
});

describe('retrying an event whose routing is not finished', () => {
  test('an event with nothing failed gets no retry', () => {
    expect(retryPlan(undefined, 3, () => 5_000)).toBeUndefined();
  });

  test("an event held back by an unreachable Temporal is retried after the gate's next probe, never sooner than the minimum", () => {
    expect(retryPlan({ message: 'down', unreachable: true }, 7, () => 5_000)).toEqual({
      message: 'down',
      retryInMs: 5_000,
    });
    expect(retryPlan({ message: 'down', unreachable: true }, 7, () => 0)).toEqual({
      message: 'down',
      retryInMs: MIN_DEFERRED_RETRY_MS,
    });
  });

  test('an event Temporal refused backs off per attempt', () => {
    expect(retryPlan({ message: 'refused', unreachable: false }, 3, () => 0)).toEqual({
      message: 'refused',
      retryInMs: routingBackoffMs(3),
    });
    expect([1, 2, 3, 7, 20].map(routingBackoffMs)).toEqual([1_000, 2_000, 4_000, 60_000, 60_000]);
  });

  test('two failures of one attempt keep the first message and are unreachable only when both are', () => {
    const down = { message: 'down', unreachable: true };
    const refused = { message: 'refused', unreachable: false };
    expect(combineFailures(undefined, undefined)).toBeUndefined();
    expect(combineFailures(down, undefined)).toBe(down);
    expect(combineFailures(undefined, refused)).toBe(refused);
    expect(combineFailures(down, refused)).toEqual({ message: 'down', unreachable: false });
    expect(combineFailures(down, { message: 'also down', unreachable: true })).toEqual({
      message: 'down',
      unreachable: true,
    });
  });
});

describe('a disabled activity that holds its events', () => {
  const now = new Date('2026-03-01T10:00:00.000Z');
  const disabled = (id: string, triggers: Trigger[], when?: { action: 'drop' | 'hold'; ttl: string }) => ({
    ...definition(id, triggers),
    enabled: false,
    definition: { triggers, ...(when === undefined ? {} : { when_disabled: when }) },
  });

  test('an event its trigger lets through is routed held until now plus the ttl, with no run to start', () => {
    const index = buildDefinitionIndex([
      disabled(A1, [{ type: 'event', event_type: 'order.paid' }], { action: 'hold', ttl: '2h' }),
    ]);
    const { routes, snapshots } = matchRoutes(index, envelope, now);
    const workflowId = eventRunWorkflowId(A1, 'e1');
    expect(routes).toEqual([
      {
        activityId: A1,
        activityVersion: 3,
        activityName: 'activity a1',
        workflowId,
        runId: runIdFor(workflowId),
        outcome: 'held',
        detail: 'held: activity disabled; expires 2026-03-01T12:00:00.000Z',
        expiresAt: new Date('2026-03-01T12:00:00.000Z'),
      },
    ]);
    expect(snapshots.size).toBe(0);
    expect(storedRoutedAtAccept(routes, false)).toBe(true);
  });

  test('an event its filter stops is not routed to it at all, as while dropping', () => {
    const index = buildDefinitionIndex([
      disabled(A1, [{ type: 'event', event_type: 'order.paid', filter: 'data.amount > 1000' }], {
        action: 'hold',
        ttl: '7d',
      }),
    ]);
    expect(matchRoutes(index, envelope, now).routes).toEqual([]);
  });

  test('a disabled activity that drops (or says nothing) gets no route, while an enabled one beside it runs', () => {
    const index = buildDefinitionIndex([
      disabled(A1, [{ type: 'event', event_type: 'order.paid' }], { action: 'drop', ttl: '7d' }),
      disabled(A2, [{ type: 'event', event_type: 'order.paid' }]),
      definition(A3, [{ type: 'event', event_type: 'order.*' }]),
    ]);
    const { routes } = matchRoutes(index, envelope, now);
    expect(routes.map((r) => [r.activityId, r.outcome])).toEqual([[A3, 'pending']]);
  });

  test('a hold without a ttl lasts the default seven days; an enabled definition holds nothing', () => {
    const hold = holdOf(
      { enabled: false, definition: { triggers: [], when_disabled: { action: 'hold' } as never } },
      now,
    );
    expect(hold?.expiresAt.toISOString()).toBe('2026-03-08T10:00:00.000Z');
    expect(holdOf({ definition: { triggers: [], when_disabled: { action: 'hold', ttl: '1m' } } }, now)).toBeUndefined();
  });

  test('cancel_on and other whole-index lookups see only the enabled definitions', () => {
    const index = buildDefinitionIndex([
      disabled(A1, [{ type: 'event', event_type: 'order.paid' }], { action: 'hold', ttl: '7d' }),
      definition(A2, [{ type: 'event', event_type: 'order.paid' }]),
    ]);
    expect(index.entries.map((entry) => entry.id)).toEqual([A2]);
    expect(index.candidates('order.paid').map((entry) => entry.id)).toEqual([A1, A2]);
  });
});
