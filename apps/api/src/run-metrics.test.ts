import { describe, expect, test } from 'vitest';
import { foldRunOutcomes, OTHER_ACTIVITIES_LABEL, RUN_DURATION_BUCKETS } from './run-metrics';

const row = (activity: string, status: string, count: number, firstStarted: string) => ({
  activity,
  status,
  count,
  sum: count * 2,
  buckets: RUN_DURATION_BUCKETS.map((le) => (le >= 2.5 ? count : 0)),
  first_started: firstStarted,
});

describe('run outcome series', () => {
  test('one series per activity and status, in a stable order', () => {
    const series = foldRunOutcomes([
      row('b', 'failed', 1, '2026-03-01T00:00:00Z'),
      row('a', 'succeeded', 3, '2026-03-02T00:00:00Z'),
      row('a', 'failed', 2, '2026-03-02T00:00:00Z'),
    ]);
    expect(series.map((entry) => [entry.activity, entry.status, entry.count])).toEqual([
      ['a', 'failed', 2],
      ['a', 'succeeded', 3],
      ['b', 'failed', 1],
    ]);
  });

  test('activities past the cap are summed under _other, the ones that ran first keep their own series', () => {
    const series = foldRunOutcomes(
      [
        row('old', 'failed', 1, '2026-03-01T00:00:00Z'),
        row('new1', 'failed', 2, '2026-03-05T00:00:00Z'),
        row('new2', 'failed', 3, '2026-03-06T00:00:00Z'),
        row('new2', 'succeeded', 1, '2026-03-04T00:00:00Z'),
      ],
      2,
    );
    expect(series.map((entry) => [entry.activity, entry.status, entry.count, entry.sum])).toEqual([
      [OTHER_ACTIVITIES_LABEL, 'failed', 2, 4],
      ['new2', 'failed', 3, 6],
      ['new2', 'succeeded', 1, 2],
      ['old', 'failed', 1, 2],
    ]);
    const other = series.find((entry) => entry.activity === OTHER_ACTIVITIES_LABEL);
    expect(other?.buckets.at(-1)).toBe(2);
  });
});
