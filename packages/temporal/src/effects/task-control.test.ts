import type { EventEnvelope, RunContext } from '@activity-core/contracts';
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { describe, expect, test } from 'vitest';
import {
  createTaskControlEffects,
  EMIT_BUDGET_EXCEEDED,
  EMIT_HOPS_EXCEEDED,
  emittedHops,
  type EmitBudget,
  type EmitEvent,
} from './task-control';

const envelope: EventEnvelope = {
  event_id: 'emit-run-1-0',
  event_type: 'loop',
  source: 'activity-core',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { n: '{{run.run_id}}' },
};

function contextWith(eventHops?: number): RunContext {
  return {
    run: {
      run_id: 'run-1',
      workflow_id: 'activity-a:e1',
      trigger_type: 'event',
      ...(eventHops === undefined ? {} : { event_hops: eventHops }),
    },
    activity: { id: 'a', name: 'a', version: 1 },
    tasks: [],
  };
}

function effectsRecording(maxHops?: number) {
  const calls: Array<{ envelope: EventEnvelope; origin: { credential: string; hops: number } }> = [];
  const emitEvent: EmitEvent = async (emitted, origin) => {
    calls.push({ envelope: emitted, origin });
    return { status: 'accepted', runs: [] };
  };
  return {
    calls,
    effects: createTaskControlEffects({
      client: {} as Client,
      emitEvent,
      ...(maxHops === undefined ? {} : { emitMaxHops: maxHops }),
    }),
  };
}

describe('emit_event hop counting', () => {
  test('an event emitted by a run counts one hop more than the event that triggered it', () => {
    expect(emittedHops(contextWith())).toBe(1);
    expect(emittedHops(contextWith(3))).toBe(4);
  });

  test('the emitted event goes to the ingress with its hop count and the run as its credential', async () => {
    const { calls, effects } = effectsRecording();
    await effects.emitEvent({ envelope, context: contextWith(2) });
    expect(calls).toHaveLength(1);
    expect(calls[0]?.origin).toEqual({ credential: 'emit:run-1', hops: 3 });
    expect(calls[0]?.envelope.data).toEqual({ n: 'run-1' });
  });

  test('an emit up to EMIT_MAX_HOPS goes through and one past it fails without retry, saying why', async () => {
    const { calls, effects } = effectsRecording(3);
    await effects.emitEvent({ envelope, context: contextWith(2) });
    const refused = await effects.emitEvent({ envelope, context: contextWith(3) }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect((refused as ApplicationFailure).nonRetryable).toBe(true);
    expect((refused as ApplicationFailure).type).toBe(EMIT_HOPS_EXCEEDED);
    expect((refused as ApplicationFailure).message).toContain('EMIT_MAX_HOPS is 3');
    expect(calls).toHaveLength(1);
  });

  test('the hop limit defaults to 8', async () => {
    const { effects } = effectsRecording();
    await effects.emitEvent({ envelope, context: contextWith(7) });
    await expect(effects.emitEvent({ envelope, context: contextWith(8) })).rejects.toThrow(/EMIT_MAX_HOPS is 8/);
  });
});

describe('emit_event budget per root', () => {
  function withBudget(granted: boolean) {
    const claims: Parameters<EmitBudget['claim']>[0][] = [];
    const calls: EventEnvelope[] = [];
    const effects = createTaskControlEffects({
      client: {} as Client,
      emitEvent: async (emitted) => {
        calls.push(emitted);
        return { status: 'accepted', runs: [] };
      },
      emitBudget: {
        limit: 4,
        claim: async (input) => {
          claims.push(input);
          return { granted, root: { source: 'shop', eventId: 'order-1' }, emitted: granted ? 1 : 4 };
        },
      },
    });
    return { effects, claims, calls };
  }
  const triggered = (hops?: number): RunContext => ({
    ...contextWith(hops),
    event: {
      event_id: 'order-1',
      event_type: 'order.paid',
      source: 'shop',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    },
  });

  test('an emit claims its event id against the event that triggered the run, saying whether that event was itself emitted', async () => {
    const { effects, claims, calls } = withBudget(true);
    await effects.emitEvent({ envelope, context: triggered() });
    await effects.emitEvent({ envelope, context: triggered(2) });
    expect(claims).toEqual([
      { eventId: 'emit-run-1-0', trigger: { source: 'shop', eventId: 'order-1' }, triggerEmitted: false, limit: 4 },
      { eventId: 'emit-run-1-0', trigger: { source: 'shop', eventId: 'order-1' }, triggerEmitted: true, limit: 4 },
    ]);
    expect(calls).toHaveLength(2);
  });

  test('a run without a triggering event is its own root', async () => {
    const { effects, claims } = withBudget(true);
    await effects.emitEvent({ envelope, context: contextWith() });
    expect(claims[0]).toMatchObject({
      trigger: { source: 'activity-core:run', eventId: 'run-1' },
      triggerEmitted: false,
    });
  });

  test('a refused claim fails the task without retry, naming the root and the limit, and emits nothing', async () => {
    const { effects, calls } = withBudget(false);
    const refused = await effects.emitEvent({ envelope, context: triggered() }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect((refused as ApplicationFailure).nonRetryable).toBe(true);
    expect((refused as ApplicationFailure).type).toBe(EMIT_BUDGET_EXCEEDED);
    expect((refused as ApplicationFailure).message).toContain('root event order-1 (source shop)');
    expect((refused as ApplicationFailure).message).toContain('EMIT_MAX_PER_ROOT is 4');
    expect(calls).toHaveLength(0);
  });

  test('an emit whose data does not render claims nothing', async () => {
    const { effects, claims } = withBudget(true);
    await expect(
      effects.emitEvent({ envelope: { ...envelope, data: { n: '{{nope.x}}' } }, context: triggered() }),
    ).rejects.toThrow();
    expect(claims).toHaveLength(0);
  });
});
