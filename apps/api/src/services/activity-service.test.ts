import { describe, expect, test } from 'vitest';
import { ActivityDefinition } from '@activity-core/contracts';
import { emitSourceIssues } from './activity-service';

const definition = (source?: string) =>
  ActivityDefinition.parse({
    name: 'emitter',
    triggers: [{ type: 'event', event_type: 'order.paid' }],
    tasks: [
      { type: 'noop' },
      { type: 'emit_event', config: { event_type: 'order.synced', ...(source === undefined ? {} : { source }) } },
    ],
  });

describe('emitted event sources', () => {
  test('an emit_event task cannot stamp a webhook: source, which triggers trust as a verified delivery', () => {
    expect(emitSourceIssues(definition('webhook:github'))).toEqual([
      {
        path: 'tasks[1].config.source',
        message: expect.stringContaining('reserved for verified webhook deliveries') as unknown as string,
      },
    ]);
  });

  test('an emit_event task cannot emit a system event type, which only the service announces', () => {
    const forged = ActivityDefinition.parse({
      name: 'forger',
      triggers: [{ type: 'event', event_type: 'order.paid' }],
      tasks: [{ type: 'emit_event', config: { event_type: 'activity_core.run.failed' } }],
    });
    expect(emitSourceIssues(forged)).toEqual([
      {
        path: 'tasks[0].config.event_type',
        message: expect.stringContaining("reserved for the service's system events") as unknown as string,
      },
    ]);
  });

  test('the service source (the default) and ordinary sources are allowed', () => {
    expect(emitSourceIssues(definition())).toEqual([]);
    expect(emitSourceIssues(definition('billing'))).toEqual([]);
  });
});
