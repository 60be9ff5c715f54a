import type { EventEnvelope } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { canonicalJson } from '@activity-core/contracts';
import { eventFingerprint } from './fingerprint';

const base: EventEnvelope = {
  event_id: 'e1',
  event_type: 'order.paid',
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { order: { id: 1, total: 10 }, tags: ['a', 'b'] },
};

describe('event fingerprints', () => {
  test('key order does not change the fingerprint', () => {
    const reordered: EventEnvelope = { ...base, data: { tags: ['a', 'b'], order: { total: 10, id: 1 } } };
    expect(eventFingerprint(reordered)).toBe(eventFingerprint(base));
  });

  test('a different value changes the fingerprint', () => {
    expect(eventFingerprint({ ...base, data: { ...base.data, order: { id: 1, total: 11 } } })).not.toBe(
      eventFingerprint(base),
    );
  });

  test('array order is significant', () => {
    expect(eventFingerprint({ ...base, data: { ...base.data, tags: ['b', 'a'] } })).not.toBe(eventFingerprint(base));
  });

  test('a new delivery timestamp alone does not change the fingerprint', () => {
    expect(eventFingerprint({ ...base, occurred_at: '2026-03-01T09:00:05Z' })).toBe(eventFingerprint(base));
  });

  test('type, source and subject are part of the identity of the content', () => {
    expect(eventFingerprint({ ...base, event_type: 'order.refunded' })).not.toBe(eventFingerprint(base));
    expect(eventFingerprint({ ...base, source: 'other' })).not.toBe(eventFingerprint(base));
    expect(eventFingerprint({ ...base, subject: 'x' })).not.toBe(eventFingerprint(base));
  });

  test('canonical JSON sorts keys at every depth and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
    );
  });
});
