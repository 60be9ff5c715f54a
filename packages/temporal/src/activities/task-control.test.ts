import type { EventEnvelope, RunContext } from '@activity-core/contracts';
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { describe, expect, test } from 'vitest';
import { createTaskControlActivities, EMIT_HOPS_EXCEEDED, emittedHops, type EmitEvent } from './task-control';

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

function activitiesRecording(maxHops?: number) {
  const calls: Array<{ envelope: EventEnvelope; origin: { credential: string; hops: number } }> = [];
  const emitEvent: EmitEvent = async (emitted, origin) => {
    calls.push({ envelope: emitted, origin });
    return { status: 'accepted', runs: [] };
  };
  return {
    calls,
    activities: createTaskControlActivities({
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
    const { calls, activities } = activitiesRecording();
    await activities.emitEvent({ envelope, context: contextWith(2) });
    expect(calls).toHaveLength(1);
    expect(calls[0]?.origin).toEqual({ credential: 'emit:run-1', hops: 3 });
    expect(calls[0]?.envelope.data).toEqual({ n: 'run-1' });
  });

  test('an emit up to EMIT_MAX_HOPS goes through and one past it fails without retry, saying why', async () => {
    const { calls, activities } = activitiesRecording(3);
    await activities.emitEvent({ envelope, context: contextWith(2) });
    const refused = await activities.emitEvent({ envelope, context: contextWith(3) }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect((refused as ApplicationFailure).nonRetryable).toBe(true);
    expect((refused as ApplicationFailure).type).toBe(EMIT_HOPS_EXCEEDED);
    expect((refused as ApplicationFailure).message).toContain('EMIT_MAX_HOPS is 3');
    expect(calls).toHaveLength(1);
  });

  test('the hop limit defaults to 8', async () => {
    const { activities } = activitiesRecording();
    await activities.emitEvent({ envelope, context: contextWith(7) });
    await expect(activities.emitEvent({ envelope, context: contextWith(8) })).rejects.toThrow(/EMIT_MAX_HOPS is 8/);
  });
});
