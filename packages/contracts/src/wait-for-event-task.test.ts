import { describe, expect, it } from 'vitest';
import { ActivityDefinition } from './activity-definition';

const definition = (config: object) => ({
  name: 'await-payment',
  triggers: [{ type: 'event', event_type: 'order.created' }],
  tasks: [{ type: 'noop' }, { type: 'wait_for_event', config }],
});

const issuePaths = (config: object): string[] => {
  const parsed = ActivityDefinition.safeParse(definition(config));
  return parsed.success ? [] : parsed.error.issues.map((issue) => issue.path.join('.'));
};

describe('a wait_for_event task', () => {
  it('takes an exact event type, a CEL match over event and trigger, and a timeout', () => {
    const parsed = ActivityDefinition.parse(
      definition({ event_type: 'order.paid', match: 'event.data.id == trigger.event.data.id', timeout: '1h' }),
    );
    expect(parsed.tasks[1]).toMatchObject({ type: 'wait_for_event', config: { event_type: 'order.paid' } });
    expect(issuePaths({ event_type: 'order.paid', timeout: '1s' })).toEqual([]);
    expect(issuePaths({ event_type: 'order.paid', timeout: '365d' })).toEqual([]);
  });

  it('takes 1 to 20 exact sources, and refuses an empty list, an empty source or more than 20, naming the field', () => {
    expect(issuePaths({ event_type: 'order.paid', sources: ['payments', 'shop'], timeout: '1h' })).toEqual([]);
    expect(issuePaths({ event_type: 'order.paid', sources: [], timeout: '1h' })).toEqual(['tasks.1.config.sources']);
    expect(issuePaths({ event_type: 'order.paid', sources: [''], timeout: '1h' })).toEqual([
      'tasks.1.config.sources.0',
    ]);
    const many = Array.from({ length: 21 }, (_, i) => `source-${i}`);
    expect(issuePaths({ event_type: 'order.paid', sources: many, timeout: '1h' })).toEqual(['tasks.1.config.sources']);
  });

  it('refuses a timeout below 1s or above 365d, and a wildcard event type', () => {
    expect(issuePaths({ event_type: 'order.paid', timeout: '999ms' })).toEqual(['tasks.1.config.timeout']);
    expect(issuePaths({ event_type: 'order.paid', timeout: '366d' })).toEqual(['tasks.1.config.timeout']);
    expect(issuePaths({ event_type: 'order.paid', timeout: 'PT1H' })).toEqual(['tasks.1.config.timeout']);
    expect(issuePaths({ event_type: 'order.*', timeout: '1h' })).toEqual(['tasks.1.config.event_type']);
    expect(issuePaths({ event_type: 'order.paid' })).toEqual(['tasks.1.config.timeout']);
  });
});
