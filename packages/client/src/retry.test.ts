import { describe, expect, test } from 'vitest';
import { backoffMs, DEFAULT_RETRY, isRetryableStatus, nextDelayMs, parseRetryAfterMs } from './retry';

describe('what is retried', () => {
  test('429 and 5xx are worth another attempt; other answers are not', () => {
    expect([429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([200, 202, 400, 401, 403, 404, 408, 409, 413, 415, 422].some(isRetryableStatus)).toBe(false);
  });
});

describe('how long to wait', () => {
  test('the backoff doubles from the initial delay up to the cap, with half of it random', () => {
    const options = { initialDelayMs: 100, maxDelayMs: 1_000 };
    expect([1, 2, 3, 4, 5].map((attempt) => backoffMs(attempt, options, () => 0))).toEqual([50, 100, 200, 400, 500]);
    expect([1, 2, 3, 4, 5].map((attempt) => backoffMs(attempt, options, () => 1))).toEqual([100, 200, 400, 800, 1_000]);
  });

  test('Retry-After is read as seconds or as an HTTP date, never negative', () => {
    const now = Date.parse('2026-03-01T09:00:00Z');
    expect(parseRetryAfterMs('5', now)).toBe(5_000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
    expect(parseRetryAfterMs('Sun, 01 Mar 2026 09:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfterMs('Sun, 01 Mar 2026 08:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs(null, now)).toBeUndefined();
  });

  test('a longer Retry-After wins over the backoff; past the attempts or the longest wait, the call gives up', () => {
    const options = { ...DEFAULT_RETRY, initialDelayMs: 100, maxAttempts: 3, maxRetryAfterMs: 10_000 };
    expect(nextDelayMs(1, options, undefined, () => 1)).toBe(100);
    expect(nextDelayMs(1, options, 2_000, () => 1)).toBe(2_000);
    expect(nextDelayMs(2, options, 10, () => 1)).toBe(200);
    expect(nextDelayMs(3, options, undefined, () => 1)).toBeUndefined();
    expect(nextDelayMs(1, options, 10_001, () => 1)).toBeUndefined();
  });
});
