import { ConflictError, type RunResume } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { resumePlan } from './rerun-input';

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
