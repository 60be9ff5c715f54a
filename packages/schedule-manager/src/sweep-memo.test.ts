import { describe, expect, test } from 'vitest';
import { SweepMemo } from './sweep-memo';

describe('the memo a sweep keeps between runs', () => {
  test('reuses a value only while its key is the same', () => {
    const memo = new SweepMemo<number>();
    let computed = 0;
    const compute = (value: number) => () => {
      computed++;
      return value;
    };
    expect(memo.get('a', 'v1', compute(1))).toBe(1);
    expect(memo.get('a', 'v1', compute(99))).toBe(1);
    expect(computed).toBe(1);
    expect(memo.get('a', 'v2', compute(2))).toBe(2);
    expect(memo.get('a', 'v2', compute(99))).toBe(2);
    expect(computed).toBe(2);
  });

  test('forgets the ids that are gone', () => {
    const memo = new SweepMemo<string>();
    memo.get('a', 'k', () => 'a');
    memo.get('b', 'k', () => 'b');
    memo.retainOnly(new Set(['b']));
    expect(memo.size).toBe(1);
    expect(memo.get('a', 'k', () => 'recomputed')).toBe('recomputed');
    expect(memo.get('b', 'k', () => 'recomputed')).toBe('b');
  });
});
