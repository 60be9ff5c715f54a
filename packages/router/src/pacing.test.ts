import type { EventEnvelope } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { pacingKeyFor, pacingRequestFor } from './pacing';

const envelope: EventEnvelope = {
  event_id: 'evt-1',
  event_type: 'order.paid',
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { account: 'acme', count: 42 },
};
const route = { eventId: 'evt-1', activityId: '00000000-0000-4000-8000-000000000001' };

describe('pacing requests', () => {
  test('an activity without throttle or rate_limit asks the bucket store for nothing', () => {
    expect(pacingRequestFor({}, envelope, route)).toBeUndefined();
  });

  test('a throttle asks for one slot of its key at period / limit apart, burst 1 unless given', () => {
    const request = pacingRequestFor({ throttle: { limit: 100, period: '1m', key: 'data.account' } }, envelope, route)!;
    expect(request.throttle).toMatchObject({ key: 'acme', intervalMs: 600, burst: 1 });
    expect(request.rateLimit).toBeUndefined();
    expect(request.throttle!.describe('acme', new Date('2026-03-01T09:00:01.500Z'))).toBe(
      'delayed by throttle (100 per 1m, burst 1) until 2026-03-01T09:00:01.500Z for key "acme"',
    );
  });

  test('a rate limit carries its period as the tolerance and says what was reached for which key', () => {
    const request = pacingRequestFor({ rate_limit: { limit: 10, period: '1m' } }, envelope, route)!;
    expect(request.rateLimit).toMatchObject({ key: '', intervalMs: 6_000, periodMs: 60_000 });
    expect(request.rateLimit!.describe('')).toBe(
      'dropped by rate_limit: 10 per 1m reached for the activity-wide bucket',
    );
  });

  test('a key that cannot be evaluated on an event falls back to the activity-wide bucket and says why', () => {
    expect(pacingKeyFor('data.missing', envelope)).toMatchObject({ key: '' });
    expect(pacingKeyFor('data.missing', envelope).keyError).toMatch(/missing/);
    expect(pacingKeyFor('data.count', envelope)).toEqual({ key: '42' });
    const request = pacingRequestFor({ rate_limit: { limit: 1, period: '1s', key: 'data.missing' } }, envelope, route)!;
    expect(request.rateLimit!.describe('')).toMatch(/activity-wide bucket \(the key could not be evaluated: .*missing/);
  });

  test('a key longer than 500 characters is never a bucket of its own: the event is paced on the activity-wide bucket, and the record says why', () => {
    const long = { ...envelope, data: { account: 'x'.repeat(501) } };
    const outcome = pacingKeyFor('data.account', long);
    expect(outcome.key).toBe('');
    expect(outcome.keyError).toMatch(/501 characters long; the limit is 500/);
  });
});
