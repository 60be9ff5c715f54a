import { ConflictError, type RunResume } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { graphResumePlan, resumePlan } from './rerun-input';

type Outcome = RunResume['prior'][number];

const outcome = (index: number, status: Outcome['status']): Outcome => ({
  index,
  type: 'http',
  workflow_id: `task-${index}`,
  status,
  ...(status === 'succeeded' ? { result: { index } } : {}),
});

const outcomes = (...statuses: Outcome['status'][]) =>
  new Map(statuses.map((status, index) => [index, outcome(index, status)] as const));

describe('where a re-run from the failed task begins', () => {
  test('at the task the run error names, with the outcomes of the tasks before it', () => {
    expect(resumePlan('r1', { task_index: 1 }, 3, outcomes('succeeded', 'failed'))).toEqual({
      from_index: 1,
      prior: [outcome(0, 'succeeded')],
    });
  });

  test('at the first task that did not succeed when the error names none', () => {
    expect(resumePlan('r1', { message: 'boom' }, 3, outcomes('succeeded', 'succeeded', 'failed'))).toEqual({
      from_index: 2,
      prior: [outcome(0, 'succeeded'), outcome(1, 'succeeded')],
    });
  });

  test('a run whose tasks all succeeded has no failed task to re-run from', () => {
    expect(() => resumePlan('r1', null, 2, outcomes('succeeded', 'succeeded'))).toThrow(ConflictError);
  });

  test('a task before the resume point without a recorded outcome refuses the re-run naming it', () => {
    expect(() => resumePlan('r1', { task_index: 2 }, 3, new Map([[0, outcome(0, 'succeeded')]]))).toThrow(
      /task 1 has no recorded outcome/,
    );
  });
});

describe('where a re-run of a graph run from its failed task begins', () => {
  const tasks = [
    { type: 'http', key: 'a', depends_on: [] },
    { type: 'http', key: 'b', depends_on: [] },
    { type: 'http', key: 'c', depends_on: ['b'] },
    { type: 'http', key: 'd', depends_on: ['a'] },
  ];

  test('reuses every task that succeeded with its whole ancestry, whatever its index, and runs the failure and what follows it again', () => {
    // b failed; c was skipped (no outcome); a and d succeeded.
    const recorded = new Map([
      [0, outcome(0, 'succeeded')],
      [1, outcome(1, 'failed')],
      [3, outcome(3, 'succeeded')],
    ]);
    expect(graphResumePlan('r1', tasks, recorded)).toEqual({
      from_index: 1,
      prior: [outcome(0, 'succeeded'), outcome(3, 'succeeded')],
    });
  });

  test('runs again a task that succeeded after a need that did not, and a for_each task', () => {
    const recorded = new Map([
      [0, outcome(0, 'failed')],
      [1, outcome(1, 'succeeded')],
      [2, outcome(2, 'succeeded')],
      [3, outcome(3, 'succeeded')],
    ]);
    const withFanOut = tasks.map((task, index) => (index === 2 ? { ...task, for_each: 'input.items' } : task));
    expect(graphResumePlan('r1', withFanOut, recorded)).toEqual({ from_index: 0, prior: [outcome(1, 'succeeded')] });
  });

  test('a graph run whose tasks all succeeded has nothing to re-run from', () => {
    const all = new Map(tasks.map((_, index) => [index, outcome(index, 'succeeded')] as const));
    expect(() => graphResumePlan('r1', tasks, all)).toThrow(ConflictError);
  });
});
