import { describe, expect, test } from 'vitest';
import { emptySlotState, isIdle, releaseSlot, requestSlot } from './concurrency-slots';

const ask = (runWorkflowId: string, limit = 1, onLimit: 'queue' | 'skip' = 'queue') => ({
  runWorkflowId,
  limit,
  onLimit,
});

describe('concurrency slots', () => {
  test('grants up to the limit and queues the rest in arrival order', () => {
    const state = emptySlotState(2, 'queue');
    expect(requestSlot(state, ask('a', 2))).toEqual([{ runWorkflowId: 'a', answer: 'granted' }]);
    expect(requestSlot(state, ask('b', 2))).toEqual([{ runWorkflowId: 'b', answer: 'granted' }]);
    expect(requestSlot(state, ask('c', 2))).toEqual([]);
    expect(requestSlot(state, ask('d', 2))).toEqual([]);
    expect(state.queue).toEqual(['c', 'd']);
    expect(releaseSlot(state, 'b')).toEqual([{ runWorkflowId: 'c', answer: 'granted' }]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'd', answer: 'granted' }]);
    expect(state.holders).toEqual(['c', 'd']);
  });

  test('skips a run over the limit when on_limit is skip, with a reason naming the limit', () => {
    const state = emptySlotState(1, 'skip');
    requestSlot(state, ask('a', 1, 'skip'));
    expect(requestSlot(state, ask('b', 1, 'skip'))).toEqual([
      {
        runWorkflowId: 'b',
        answer: 'skipped',
        reason: 'the concurrency limit of 1 was reached (1 running); on_limit is skip',
      },
    ]);
    expect(state.queue).toEqual([]);
  });

  test('a repeated request from a holder is granted again and one from a queued run changes nothing', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a'));
    requestSlot(state, ask('b'));
    expect(requestSlot(state, ask('a'))).toEqual([{ runWorkflowId: 'a', answer: 'granted' }]);
    expect(requestSlot(state, ask('b'))).toEqual([]);
    expect(state).toMatchObject({ holders: ['a'], queue: ['b'] });
  });

  test('a release from an unknown run, or a second release, changes nothing', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a'));
    requestSlot(state, ask('b'));
    expect(releaseSlot(state, 'zzz')).toEqual([]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'b', answer: 'granted' }]);
    expect(releaseSlot(state, 'a')).toEqual([]);
    expect(state).toMatchObject({ holders: ['b'], queue: [] });
  });

  test('a queued run that leaves the queue is never granted', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a'));
    requestSlot(state, ask('b'));
    requestSlot(state, ask('c'));
    expect(releaseSlot(state, 'b')).toEqual([]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'c', answer: 'granted' }]);
  });

  test('a new request never overtakes the queue, even when a slot is free', () => {
    const state = { limit: 1, onLimit: 'queue' as const, holders: [], queue: ['x'] };
    expect(requestSlot(state, ask('y'))).toEqual([{ runWorkflowId: 'x', answer: 'granted' }]);
    expect(state).toMatchObject({ holders: ['x'], queue: ['y'] });
  });

  test('a raised limit grants waiting runs at once; a lowered one takes no slot away', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a', 1));
    requestSlot(state, ask('b', 1));
    expect(requestSlot(state, ask('c', 3))).toEqual([
      { runWorkflowId: 'b', answer: 'granted' },
      { runWorkflowId: 'c', answer: 'granted' },
    ]);
    expect(requestSlot(state, ask('d', 1))).toEqual([]);
    expect(state).toMatchObject({ holders: ['a', 'b', 'c'], queue: ['d'] });
    releaseSlot(state, 'a');
    releaseSlot(state, 'b');
    expect(releaseSlot(state, 'c')).toEqual([{ runWorkflowId: 'd', answer: 'granted' }]);
  });

  test('is idle only with no holder and no queue', () => {
    const state = emptySlotState(1, 'queue');
    expect(isIdle(state)).toBe(true);
    requestSlot(state, ask('a'));
    expect(isIdle(state)).toBe(false);
    releaseSlot(state, 'a');
    expect(isIdle(state)).toBe(true);
  });
});
