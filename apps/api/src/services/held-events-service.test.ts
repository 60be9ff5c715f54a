import type { DefinitionRow, HeldEventsRepository, ReleaseOutcome } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { createHeldEventsService, notHeld } from './held-events-service';

describe('the event ids a release or discard did not find held', () => {
  test('are those asked for and not done, once each, in the order asked', () => {
    expect(notHeld(['e3', 'e1', 'e3', 'e2'], new Set(['e1']))).toEqual(['e3', 'e2']);
  });

  test('are none when no ids were asked for (all held events)', () => {
    expect(notHeld(undefined, new Set())).toEqual([]);
  });
});

const ACTIVITY = '00000000-0000-4000-8000-0000000000a1';
const row = (enabled: boolean): DefinitionRow => ({
  id: ACTIVITY,
  name: 'ship-order',
  version: 4,
  enabled,
  definition: { name: 'ship-order', enabled, triggers: [], tasks: [{ type: 'noop' }] } as never,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  deletedAt: null,
});

/** A release over held events `held` (arrival order), with a clock the dispatch moves on by `stepMs` per event. */
function harness(options: {
  held: string[];
  enabled?: boolean;
  deleted?: boolean;
  stepMs?: number;
  recorded?: string[];
}) {
  let clock = 1_000_000;
  const held = [...options.held];
  const dispatched: string[] = [];
  const released: Array<{ eventId: string; version: number }> = [];
  const repository = {
    next: async (_id: string, limit: number, ids?: readonly string[]) =>
      held.filter((eventId) => ids === undefined || ids.includes(eventId)).slice(0, limit),
    release: async (eventId: string, _a: string, to: { version: number }): Promise<ReleaseOutcome> => {
      const at = held.indexOf(eventId);
      if (at === -1) return 'not_held';
      held.splice(at, 1);
      released.push({ eventId, version: to.version });
      return options.recorded?.includes(eventId) === true ? 'duplicate' : 'pending';
    },
    count: async () => held.length,
  } as unknown as HeldEventsRepository;
  const service = createHeldEventsService({
    held: repository,
    events: {
      get: async (eventId: string) =>
        ({
          event: { payload: { event_id: eventId }, routingAttempts: 0, hops: 0 },
          routes: [],
        }) as never,
    },
    definitions: {
      historyHead: async () => ({
        id: ACTIVITY,
        currentVersion: 4,
        deletedAt: options.deleted === true ? new Date(0) : null,
        deletedBy: null,
      }),
      get: async () => (options.deleted === true ? undefined : row(options.enabled ?? true)),
    },
    ingest: {
      dispatch: async (envelope) => {
        dispatched.push(envelope.event_id);
        clock += options.stepMs ?? 1;
        return new Map([[ACTIVITY, 'started' as const]]);
      },
    },
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    now: () => clock,
  });
  return { service, dispatched, released, held };
}

describe('releasing held events', () => {
  test('dispatches each one after the other in arrival order, on the current version, and counts what it did', async () => {
    const { service, dispatched, released } = harness({ held: ['e1', 'e2', 'e3', 'e4'], recorded: ['e2'] });
    const answer = await service.release(ACTIVITY, 'api_key:abc');
    expect(dispatched).toEqual(['e1', 'e3', 'e4']);
    expect(released.map((r) => r.eventId)).toEqual(['e1', 'e2', 'e3', 'e4']);
    expect(released.every((r) => r.version === 4)).toBe(true);
    expect(answer).toEqual({
      activity_id: ACTIVITY,
      released: 4,
      started: 3,
      duplicate: 1,
      pending: 0,
      other: {},
      remaining: 0,
      not_held: [],
    });
  });

  test('stops once its time budget is spent and answers what is still held', async () => {
    const { service, dispatched } = harness({ held: ['e1', 'e2', 'e3', 'e4', 'e5'], stepMs: 4_000 });
    const answer = await service.release(ACTIVITY, 'api_key:abc');
    // 4 s per event: after the third the 10 s budget is spent.
    expect(dispatched).toEqual(['e1', 'e2', 'e3']);
    expect(answer).toMatchObject({ released: 3, remaining: 2 });
  });

  test('by id: only those, in arrival order whatever order they were asked in; the rest are named not held', async () => {
    const { service, dispatched } = harness({ held: ['e1', 'e2', 'e3'] });
    const answer = await service.release(ACTIVITY, 'api_key:abc', ['e3', 'e9', 'e1']);
    expect(dispatched).toEqual(['e1', 'e3']);
    expect(answer).toMatchObject({ released: 2, remaining: 1, not_held: ['e9'] });
  });

  test('is refused while the activity is disabled, and once it is deleted', async () => {
    await expect(harness({ held: ['e1'], enabled: false }).service.release(ACTIVITY, 'x')).rejects.toThrow(
      /is disabled: enable it first/,
    );
    await expect(harness({ held: ['e1'], deleted: true }).service.release(ACTIVITY, 'x')).rejects.toThrow(
      /was deleted/,
    );
  });
});
