import type { ActivityDefinition } from '@activity-core/contracts';
import { describe, expect, it } from 'vitest';
import { cancelWatchers, decideCancellations, MAX_CANCEL_SCAN_COST } from './cancel-on';
import { buildDefinitionIndex } from './definition-index';

const envelope = (event_id: string, event_type: string, data: Record<string, unknown>, source = 'shop') => ({
  event_id,
  event_type,
  source,
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

const definition = {
  id: '00000000-0000-4000-8000-000000000001',
  name: 'fulfil-order',
  version: 1,
  definition: {
    triggers: [
      { type: 'cron', cron: '0 * * * *' },
      {
        type: 'event',
        event_type: 'order.created',
        source: 'shop',
        cancel_on: [{ event_type: 'order.cancelled', match: 'event.data.order_id == trigger.event.data.order_id' }],
      },
    ],
  } as unknown as Pick<ActivityDefinition, 'triggers'>,
};

describe('cancel_on decisions', () => {
  const index = buildDefinitionIndex([definition]);

  it('find the definitions that name an event type in cancel_on, and none for other types', () => {
    expect(cancelWatchers(index, 'order.cancelled').map((w) => w.id)).toEqual([definition.id]);
    expect(cancelWatchers(index, 'order.created')).toEqual([]);
  });

  it('keep, for an event from a given source, only the entries that accept it', () => {
    const guarded = {
      ...definition,
      id: '00000000-0000-4000-8000-000000000002',
      definition: {
        triggers: [
          {
            type: 'event',
            event_type: 'order.created',
            cancel_on: [
              { event_type: 'order.cancelled', sources: ['shop', 'support'], match: 'true' },
              { event_type: 'order.cancelled', sources: ['support'], match: 'false' },
            ],
          },
        ],
      } as unknown as Pick<ActivityDefinition, 'triggers'>,
    };
    const both = buildDefinitionIndex([definition, guarded]);
    const entriesFor = (source?: string) =>
      cancelWatchers(both, 'order.cancelled', source).map((watcher) => [
        watcher.id,
        watcher.entries.map((entry) => entry.entryIndex),
      ]);
    expect(entriesFor('shop')).toEqual([
      [definition.id, [0]],
      [guarded.id, [0]],
    ]);
    expect(entriesFor('support')).toEqual([
      [definition.id, [0]],
      [guarded.id, [0, 1]],
    ]);
    expect(entriesFor('forger')).toEqual([[definition.id, [0]]]);
    expect(entriesFor()).toEqual(entriesFor('support'));
  });

  it('cancel only the runs whose trigger event matches, and count runs the expression fails on', () => {
    const [watcher] = cancelWatchers(index, 'order.cancelled');
    const decision = decideCancellations(watcher!, envelope('c1', 'order.cancelled', { order_id: 'A' }), [
      { runId: 'run-a', workflowId: 'wf-a', triggerEvent: envelope('e1', 'order.created', { order_id: 'A' }) },
      { runId: 'run-b', workflowId: 'wf-b', triggerEvent: envelope('e2', 'order.created', { order_id: 'B' }) },
      { runId: 'run-c', workflowId: 'wf-c', triggerEvent: envelope('e3', 'order.created', {}) },
      { runId: 'run-d', workflowId: 'wf-d', triggerEvent: null },
      {
        runId: 'run-e',
        workflowId: 'wf-e',
        triggerEvent: envelope('e5', 'order.created', { order_id: 'A' }, 'other-source'),
      },
    ]);
    expect(decision.cancel).toEqual([
      {
        runId: 'run-a',
        workflowId: 'wf-a',
        detail: 'triggers[1].cancel_on[0] matched: event.data.order_id == trigger.event.data.order_id',
      },
    ]);
    expect(decision.errors).toBe(2);
  });

  it('bound the cost of all the evaluations of one event together, leaving the runs past the budget unexamined', () => {
    // Each evaluation of this expression runs out of its own limit: one hostile event, tried against every run.
    const costly = 'event.data.items.all(a, event.data.items.all(b, a + b != trigger.event.data.order_id))';
    const hostileIndex = buildDefinitionIndex([
      {
        ...definition,
        definition: {
          triggers: [
            {
              type: 'event',
              event_type: 'order.created',
              source: 'shop',
              cancel_on: [{ event_type: 'order.cancelled', match: costly }],
            },
          ],
        } as unknown as Pick<ActivityDefinition, 'triggers'>,
      },
    ]);
    const [watcher] = cancelWatchers(hostileIndex, 'order.cancelled');
    const items = Array.from({ length: 5_000 }, (_, i) => `item-${i}`);
    const cancelling = envelope('c1', 'order.cancelled', { items });
    const runs = Array.from({ length: 6 }, (_, i) => ({
      runId: `run-${i}`,
      workflowId: `wf-${i}`,
      triggerEvent: envelope(`e${i}`, 'order.created', { order_id: `O${i}` }),
    }));
    const budget = { remaining: MAX_CANCEL_SCAN_COST };
    const decision = decideCancellations(watcher!, cancelling, runs, budget);
    // MAX_CANCEL_SCAN_COST pays for two whole evaluations at their own limit, no more.
    expect(decision).toEqual({ cancel: [], errors: 2, examined: 2 });
    expect(budget.remaining).toBe(0);
    // A later slice or another activity scanned for the same event finds the budget spent and examines nothing.
    expect(decideCancellations(watcher!, cancelling, runs.slice(2), budget)).toEqual({
      cancel: [],
      errors: 0,
      examined: 0,
    });
    // Two evaluations at their full cost limit are real CPU work (about 1-2 s on a quiet core, several times that
    // on a loaded one); the assertions are about the budget, not the time, so the time limit is generous.
  }, 30_000);

  it('let cheap expressions examine thousands of runs on one budget', () => {
    const [watcher] = cancelWatchers(index, 'order.cancelled');
    const runs = Array.from({ length: 5_000 }, (_, i) => ({
      runId: `run-${i}`,
      workflowId: `wf-${i}`,
      triggerEvent: envelope(`e${i}`, 'order.created', { order_id: i === 4_999 ? 'A' : `O${i}` }),
    }));
    const budget = { remaining: MAX_CANCEL_SCAN_COST };
    const decision = decideCancellations(watcher!, envelope('c1', 'order.cancelled', { order_id: 'A' }), runs, budget);
    expect(decision.examined).toBe(5_000);
    expect(decision.cancel.map((run) => run.runId)).toEqual(['run-4999']);
    expect(budget.remaining).toBeGreaterThan(MAX_CANCEL_SCAN_COST / 2);
  });
});
