import { describe, expect, test } from 'vitest';
import { EventId } from './event-envelope';
import { assignedEventId, reservedEventIdReason } from './ids';

describe('assigned event ids', () => {
  test('an assigned id is evt_ followed by the UUID it is built from', () => {
    expect(assignedEventId('0d6c1b7e-8f1a-4c2b-9d3e-5a6b7c8d9e0f')).toBe('evt_0d6c1b7e-8f1a-4c2b-9d3e-5a6b7c8d9e0f');
  });

  test('without a UUID each call draws a fresh one: evt_ and a lowercase UUIDv4, 40 characters', () => {
    const ids = new Set(Array.from({ length: 100 }, () => assignedEventId()));
    expect(ids.size).toBe(100);
    for (const id of ids)
      expect(id).toMatch(/^evt_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('an assigned id is a valid event id that no reserved form claims', () => {
    const id = assignedEventId();
    expect(EventId.safeParse(id).success).toBe(true);
    expect(reservedEventIdReason(id)).toBeUndefined();
  });

  test('anything but a lowercase UUID is refused, so the format cannot drift', () => {
    for (const uuid of ['', 'abc', '0D6C1B7E-8F1A-4C2B-9D3E-5A6B7C8D9E0F', '0d6c1b7e8f1a4c2b9d3e5a6b7c8d9e0f'])
      expect(() => assignedEventId(uuid), uuid).toThrow();
  });
});
