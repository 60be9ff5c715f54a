import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { createEventsRepository, type NewRoute } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { databasePerTest } from './harness';

/**
 * The routing record: what one routing attempt of an event achieved, written
 * after Temporal answered the run starts (`EventsRepository.settle`).
 */
const testDatabase = databasePerTest();

const FIRST_ACTIVITY = '00000000-0000-4000-8000-000000000001';
const SECOND_ACTIVITY = '00000000-0000-4000-8000-000000000003';

/** A route of `activityId` with a run due (outcome `pending`), its ids as the ingest builds them. */
const route = (id: string, activityId = FIRST_ACTIVITY): NewRoute => {
  const workflowId = eventRunWorkflowId(activityId, id);
  return {
    activityId,
    activityVersion: 1,
    activityName: `routed-${activityId.slice(-1)}`,
    workflowId,
    runId: runIdFor(workflowId),
  };
};

function open() {
  const database = testDatabase.connect(4);
  const events = createEventsRepository(database.db, { statements: database.statements });
  /** Accepts `id` with a route pending (`both`: one for each of two activities). */
  const acceptPending = async (id: string, both = false) => {
    const result = await events.accept({
      envelope: {
        event_id: id,
        event_type: 'routing.test',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00.000Z',
        data: { id },
      },
      fingerprint: `fingerprint-${id}`,
      idOrigin: 'body',
      routes: both ? [route(id), route(id, SECOND_ACTIVITY)] : [route(id)],
      leaseMs: 30_000,
    });
    expect(result.kind).toBe('accepted');
  };
  const state = async (id: string) => {
    const { rows } = await database.pool.query<{
      routing_state: string;
      last_error: string | null;
      retry_due: boolean;
    }>(
      `SELECT routing_state, last_error, routed_at IS NOT NULL AS routed_at_set,
              next_attempt_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes' AS retry_due
       FROM events WHERE event_id = $1`,
      [id],
    );
    const routes = await database.pool.query<{ outcome: string }>(
      'SELECT outcome FROM event_routes WHERE event_id = $1 ORDER BY activity_id',
      [id],
    );
    return { ...rows[0]!, routes: routes.rows.map((r) => r.outcome) };
  };
  return { database, events, acceptPending, state };
}

describe('the routing record', () => {
  test("marks the event routed with Temporal's answer for each route once none is left pending, clearing an earlier failure", async () => {
    const { events, acceptPending, state } = open();
    await acceptPending('whole', true);
    await events.settle('whole', [], { message: 'Temporal unreachable', retryInMs: 1_000 });
    expect(await state('whole')).toMatchObject({
      routing_state: 'pending',
      last_error: 'Temporal unreachable',
      routed_at_set: false,
    });
    expect(
      await events.settle('whole', [
        { activityId: FIRST_ACTIVITY, outcome: 'started' },
        { activityId: SECOND_ACTIVITY, outcome: 'duplicate' },
      ]),
    ).toBe(true);
    expect(await state('whole')).toMatchObject({
      routing_state: 'routed',
      last_error: null,
      routed_at_set: true,
      routes: ['started', 'duplicate'],
    });
  });

  test('keeps an event pending while one of its routes is unanswered, and routes it once that route is answered', async () => {
    const { events, acceptPending, state } = open();
    await acceptPending('half', true);
    expect(await events.settle('half', [{ activityId: FIRST_ACTIVITY, outcome: 'started' }])).toBe(false);
    expect(await state('half')).toMatchObject({ routing_state: 'pending', routes: ['started', 'pending'] });
    expect(await events.settle('half', [{ activityId: SECOND_ACTIVITY, outcome: 'duplicate' }])).toBe(true);
    expect(await state('half')).toMatchObject({ routing_state: 'routed', routes: ['started', 'duplicate'] });
  });

  test('keeps the first answer of a settled route and does not route an event twice', async () => {
    const { events, acceptPending, state } = open();
    await acceptPending('once');
    expect(await events.settle('once', [{ activityId: FIRST_ACTIVITY, outcome: 'started' }])).toBe(true);
    expect(await events.settle('once', [{ activityId: FIRST_ACTIVITY, outcome: 'duplicate' }])).toBe(false);
    expect(await events.settle('unknown-event', [{ activityId: FIRST_ACTIVITY, outcome: 'started' }])).toBe(false);
    expect(await state('once')).toMatchObject({ routing_state: 'routed', routes: ['started'] });
  });

  test('of a failed attempt records the failure and its retry time, and keeps the answers Temporal gave', async () => {
    const { events, acceptPending, state } = open();
    await acceptPending('failing', true);
    const routed = await events.settle('failing', [{ activityId: FIRST_ACTIVITY, outcome: 'started' }], {
      message: 'Temporal unreachable',
      retryInMs: 3_600_000,
    });
    expect(routed).toBe(false);
    expect(await state('failing')).toEqual({
      routing_state: 'pending',
      last_error: 'Temporal unreachable',
      routed_at_set: false,
      retry_due: true,
      routes: ['started', 'pending'],
    });
  });

  test('written by two processes at once for the same events routes each event exactly once', async () => {
    const first = open();
    const second = open();
    const batch = Array.from({ length: 30 }, (_, i) => `race-${String(i).padStart(3, '0')}`);
    for (const id of batch) await first.acceptPending(id, true);
    const settle = (side: typeof first, id: string) =>
      side.events.settle(id, [
        { activityId: FIRST_ACTIVITY, outcome: 'started' },
        { activityId: SECOND_ACTIVITY, outcome: 'started' },
      ]);
    const [a, b] = await Promise.all([
      Promise.all(batch.map((id) => settle(first, id))),
      Promise.all([...batch].reverse().map((id) => settle(second, id))),
    ]);
    for (const [i, id] of batch.entries()) {
      expect([a[i], b[batch.length - 1 - i]].sort()).toEqual([false, true]);
      expect(await first.state(id)).toMatchObject({ routing_state: 'routed', routes: ['started', 'started'] });
    }
  });
});
