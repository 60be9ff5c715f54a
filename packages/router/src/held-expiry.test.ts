import { describe, expect, test } from 'vitest';
import { createHeldExpiry } from './held-expiry';

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

describe('the held-event expiry sweep', () => {
  test('repeats full batches until one comes back short, and answers how many it recorded expired', async () => {
    const batches = [3, 3, 1];
    const asked: number[] = [];
    const expiry = createHeldExpiry({
      held: {
        expireDue: async (limit) => {
          asked.push(limit);
          return Array.from({ length: batches.shift() ?? 0 }, () => 'activity');
        },
      },
      logger,
      batchSize: 3,
    });
    expect(await expiry.sweep()).toBe(7);
    expect(asked).toEqual([3, 3, 3]);
  });

  test('a sweep with nothing due asks once', async () => {
    let calls = 0;
    const expiry = createHeldExpiry({
      held: {
        expireDue: async () => {
          calls++;
          return [];
        },
      },
      logger,
    });
    expect(await expiry.sweep()).toBe(0);
    expect(calls).toBe(1);
  });
});
