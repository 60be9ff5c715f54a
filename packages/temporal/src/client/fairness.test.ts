import type { ActivitySnapshot, Fairness, RunTrigger } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { boundedFairnessKey, MAX_FAIRNESS_KEY_BYTES, runFairness } from './fairness';

const ACTIVITY_ID = '00000000-0000-4000-8000-000000000001';
const activity = (fairness?: Fairness): ActivitySnapshot => ({
  id: ACTIVITY_ID,
  name: 'tenant-sync',
  version: 1,
  definition: {
    name: 'tenant-sync',
    enabled: true,
    triggers: [],
    tasks: [{ type: 'noop' }],
    ...(fairness === undefined ? {} : { fairness }),
  } as unknown as ActivitySnapshot['definition'],
});
const eventRun = (data: Record<string, unknown>): RunTrigger => ({
  type: 'event',
  event: { event_id: 'e', event_type: 't', source: 's', occurred_at: '2026-03-01T09:00:00Z', data },
});
const cronRun: RunTrigger = {
  type: 'cron',
  scheduled_for: '2026-03-01T09:00:00+00:00',
  window_start: '2026-03-01T08:00:00+00:00',
  window_end: '2026-03-01T09:00:00+00:00',
};

describe('run fairness', () => {
  test("without a fairness field every run's key is its activity's id, with no weight", () => {
    expect(runFairness(activity(), eventRun({ tenant: 'acme' }))).toEqual({ fairnessKey: ACTIVITY_ID });
    expect(runFairness(activity(), cronRun)).toEqual({ fairnessKey: ACTIVITY_ID });
  });

  test("an event run's key is the value of the definition's key over its event, with the definition's weight", () => {
    expect(runFairness(activity({ key: 'data.tenant', weight: 2.5 }), eventRun({ tenant: 'acme' }))).toEqual({
      fairnessKey: 'acme',
      fairnessWeight: 2.5,
    });
    expect(runFairness(activity({ key: 'data.shard' }), eventRun({ shard: 7 }))).toEqual({ fairnessKey: '7' });
  });

  test("a run without an event, or whose key cannot be evaluated, falls back to the activity's id and keeps the weight", () => {
    expect(runFairness(activity({ key: 'data.tenant', weight: 3 }), cronRun)).toEqual({
      fairnessKey: ACTIVITY_ID,
      fairnessWeight: 3,
    });
    expect(runFairness(activity({ key: 'data.tenant' }), eventRun({}))).toEqual({ fairnessKey: ACTIVITY_ID });
    expect(runFairness(activity({ key: 'data.tenant' }), eventRun({ tenant: ['a', 'list'] }))).toEqual({
      fairnessKey: ACTIVITY_ID,
    });
  });

  test('a key longer than 64 bytes becomes a digest that keeps two long keys apart and one long key stable', () => {
    expect(boundedFairnessKey('acme')).toBe('acme');
    const exactly = 'k'.repeat(MAX_FAIRNESS_KEY_BYTES);
    expect(boundedFairnessKey(exactly)).toBe(exactly);
    const long = 'tenant-'.repeat(20);
    const digest = boundedFairnessKey(long);
    expect(digest).toMatch(/^sha256:[0-9a-f]{32}$/);
    expect(boundedFairnessKey(long)).toBe(digest);
    expect(boundedFairnessKey(`${long}x`)).not.toBe(digest);
    // Bytes, not characters: 22 three-byte characters are 66 bytes.
    expect(boundedFairnessKey('€'.repeat(22))).toMatch(/^sha256:/);
    expect(
      runFairness(activity({ key: 'data.tenant' }), eventRun({ tenant: long })).fairnessKey.length,
    ).toBeLessThanOrEqual(MAX_FAIRNESS_KEY_BYTES);
  });
});
