import type { ActivityDefinition } from '@activity-core/contracts';
import { describe, expect, it } from 'vitest';
import { cancelWatchers, decideCancellations } from './cancel-on';
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
});
