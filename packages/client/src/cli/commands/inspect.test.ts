import { ActivityDefinition } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { graphText, pacingText, skippedText } from './inspect';

describe('how the CLI shows a task graph', () => {
  test('get prints each task with what it needs, its rule, condition and fan-out', () => {
    const { tasks } = ActivityDefinition.parse({
      name: 'g',
      tasks: [
        { type: 'noop', key: 'a', depends_on: [] },
        { type: 'noop', key: 'b', depends_on: [], for_each: 'event.data.items', max_parallel: 2 },
        { type: 'noop', depends_on: ['a', 'b'], trigger_rule: 'all_done', if: 'tasks.a.status == "succeeded"' },
      ],
    });
    expect(graphText(tasks)).toBe(
      '# task graph:\n' +
        '#   a (noop): starts with the run\n' +
        '#   b (noop): starts with the run · for each of event.data.items, 2 at a time\n' +
        '#   #2 (noop): after a, b · all_done · if tasks.a.status == "succeeded"\n',
    );
  });

  test('a skipped task says why in one line', () => {
    expect(skippedText({ reason: 'condition_false', expression: 'x > 1.0', value: false })).toBe(
      'if x > 1.0 was false',
    );
    expect(skippedText({ reason: 'need_failed', rule: 'all_succeeded', needs: [0, 2] })).toBe(
      'a task it needs failed (#0, #2)',
    );
    expect(skippedText({ reason: 'no_need_failed', rule: 'any_failed' })).toBe('any_failed: no task it needs failed');
  });
});

describe("how the CLI shows a run's pacing", () => {
  test('runs <run_id> names the priority, the fairness key and, for a delayed run, until when', () => {
    expect(pacingText({ priority: 2, fairness_key: 'acme', not_before: '2026-03-01T09:02:24.600Z' })).toBe(
      'priority 2 · fairness key acme · delayed by throttle until 2026-03-01T09:02:24.600Z',
    );
    expect(pacingText({ priority: 3, fairness_key: 'acme', not_before: null })).toBe('priority 3 · fairness key acme');
  });

  test('a run recorded before priorities were recorded has no pacing line', () => {
    expect(pacingText({ priority: null, fairness_key: null, not_before: null })).toBe('');
  });
});
