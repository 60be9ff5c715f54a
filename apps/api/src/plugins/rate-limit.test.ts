import { describe, expect, test } from 'vitest';
import { createWebhookLimits, createWindowCounter, RateLimitedError } from './rate-limit';

describe('fixed-window counters', () => {
  test('a key is refused past its limit until its window ends, and other keys are unaffected', () => {
    let now = 0;
    const counter = createWindowCounter({ max: 2, windowMs: 10_000, now: () => now });
    expect([counter.hit('a'), counter.hit('a')]).toEqual([undefined, undefined]);
    expect(counter.blocked('a')).toBe(10);
    expect(counter.hit('a')).toBe(10);
    expect(counter.blocked('b')).toBeUndefined();
    now = 9_500;
    expect(counter.blocked('a')).toBe(1);
    now = 10_000;
    expect(counter.blocked('a')).toBeUndefined();
  });

  test('a limit of 0 turns counting off', () => {
    const counter = createWindowCounter({ max: 0, windowMs: 1_000 });
    for (let i = 0; i < 5; i++) counter.hit('a');
    expect(counter.blocked('a')).toBeUndefined();
  });
});

describe('webhook limits', () => {
  test('unverified deliveries block their address, never the source; verified ones spend the source budget', () => {
    const limits = createWebhookLimits({
      perSource: { max: 1, windowMs: 60_000 },
      failuresPerAddress: { max: 2, windowMs: 60_000 },
    });
    limits.unverified('203.0.113.7');
    limits.unverified('203.0.113.7');
    expect(() => limits.unverified('203.0.113.7')).toThrow(RateLimitedError);
    expect(() => limits.unverified('198.51.100.1')).not.toThrow();
    expect(() => limits.verified('shop')).not.toThrow();
    const over = (() => {
      try {
        limits.verified('shop');
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(over).toBeInstanceOf(RateLimitedError);
    expect((over as RateLimitedError).retryAfterSeconds).toBe(60);
  });

  test('failures and replays from anywhere in one IPv6 /64 count together, other /64s apart', () => {
    const limits = createWebhookLimits({
      perSource: { max: 1, windowMs: 60_000 },
      failuresPerAddress: { max: 2, windowMs: 60_000 },
    });
    limits.unverified('2001:db8:1:2::1');
    limits.repeated('2001:db8:1:2::2');
    expect(() => limits.unverified('2001:db8:1:2:ffff::3')).toThrow(RateLimitedError);
    expect(() => limits.unverified('2001:db8:1:3::1')).not.toThrow();
  });

  test('replays count against the address and never spend the source budget', () => {
    const limits = createWebhookLimits({
      perSource: { max: 1, windowMs: 60_000 },
      failuresPerAddress: { max: 2, windowMs: 60_000 },
    });
    for (let i = 0; i < 5; i++) limits.repeated('203.0.113.9');
    expect(() => limits.verified('shop')).not.toThrow();
    expect(() => limits.unverified('203.0.113.9')).toThrow(RateLimitedError);
  });
});
