import { describe, expect, test } from 'vitest';
import { forEachConcurrently } from './bounded-parallel';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('running work with bounded concurrency', () => {
  test('calls every item once and never has more than the limit in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const seen: number[] = [];
    await forEachConcurrently(
      Array.from({ length: 25 }, (_, i) => i),
      4,
      async (item, index) => {
        expect(index).toBe(item);
        inFlight++;
        most = Math.max(most, inFlight);
        await tick();
        seen.push(item);
        inFlight--;
      },
    );
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(most).toBe(4);
  });

  test('stops starting new calls after a failure, lets running ones finish, and throws the first failure', async () => {
    const started: number[] = [];
    const finished: number[] = [];
    const run = forEachConcurrently([0, 1, 2, 3, 4, 5, 6, 7], 2, async (item) => {
      started.push(item);
      await tick();
      if (item === 1) throw new Error('boom 1');
      if (item === 2) throw new Error('boom 2');
      finished.push(item);
    });
    await expect(run).rejects.toThrow('boom 1');
    expect(started.length).toBeLessThan(8);
    expect(finished).toContain(0);
  });

  test('does nothing for no items and refuses a limit below one', async () => {
    await forEachConcurrently([], 3, () => Promise.reject(new Error('never called')));
    await expect(forEachConcurrently([1], 0, async () => undefined)).rejects.toThrow(RangeError);
  });
});
