import type { ActivitySnapshot, RunTrigger } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { runPriority } from './run-starter';

const activity = (priority?: number): ActivitySnapshot => ({
  id: '00000000-0000-4000-8000-000000000001',
  name: 'orders',
  version: 1,
  definition: {
    name: 'orders',
    enabled: true,
    triggers: [],
    tasks: [{ type: 'noop' }],
    ...(priority === undefined ? {} : { priority }),
  } as unknown as ActivitySnapshot['definition'],
});
const event: RunTrigger = {
  type: 'event',
  event: { event_id: 'e', event_type: 't', source: 's', occurred_at: '2026-03-01T09:00:00Z', data: {} },
};
const window = {
  scheduled_for: '2026-03-01T09:00:00+00:00',
  window_start: '2026-03-01T08:00:00+00:00',
  window_end: '2026-03-01T09:00:00+00:00',
};

describe('run priority', () => {
  test('a live run has its definition priority, 3 when the definition names none', () => {
    expect(runPriority({ activity: activity(), trigger: event })).toBe(3);
    expect(runPriority({ activity: activity(1), trigger: event })).toBe(1);
    expect(runPriority({ activity: activity(2), trigger: { type: 'cron', ...window } })).toBe(2);
  });

  test('re-runs, backfills and cron catch-ups run one lower than live runs, never below 5', () => {
    expect(runPriority({ activity: activity(), trigger: event, rerun: { of: 'r', attempt: 1 } })).toBe(4);
    expect(runPriority({ activity: activity(1), trigger: { type: 'backfill', ...window } })).toBe(2);
    expect(runPriority({ activity: activity(2), trigger: { type: 'cron', ...window }, catchUp: true })).toBe(3);
    expect(runPriority({ activity: activity(5), trigger: { type: 'backfill', ...window } })).toBe(5);
  });

  test('a priority the caller names wins over every default', () => {
    expect(runPriority({ activity: activity(), trigger: { type: 'backfill', ...window }, priority: 1 })).toBe(1);
  });
});
