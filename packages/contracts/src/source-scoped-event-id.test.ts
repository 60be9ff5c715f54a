import { describe, expect, test } from 'vitest';
import { EventId } from './event-envelope';
import { reservedEventIdReason, sourceScopedEventId } from './ids';

describe('source-scoped event ids', () => {
  test('name the source and the producer id, readable', () => {
    expect(sourceScopedEventId('shop', 'order-42')).toBe('src:shop:order-42');
    expect(sourceScopedEventId('shop:eu', 'order-42')).toBe('src:shop%3Aeu:order-42');
    expect(sourceScopedEventId('https://crm.example/x y', 'c-1')).toBe('src:https%3A%2F%2Fcrm.example%2Fx%20y:c-1');
  });

  test('give two producers with the same id two events, and one producer the same id every time', () => {
    expect(sourceScopedEventId('shop', 'X')).not.toBe(sourceScopedEventId('crm', 'X'));
    expect(sourceScopedEventId('shop', 'X')).toBe(sourceScopedEventId('shop', 'X'));
  });

  test('never let a colon move between the source and the id', () => {
    // Without encoding both would be src:a:b:c.
    expect(sourceScopedEventId('a:b', 'c')).not.toBe(sourceScopedEventId('a', 'b:c'));
  });

  test('stay within the event id limit and printable: long pairs and unencodable sources become a digest', () => {
    const long = sourceScopedEventId('s'.repeat(500), 'e'.repeat(200));
    expect(long).toMatch(/^src:~[0-9a-f]{64}$/);
    expect(long).toBe(sourceScopedEventId('s'.repeat(500), 'e'.repeat(200)));
    expect(long).not.toBe(sourceScopedEventId('s'.repeat(500), 'e'.repeat(199)));
    const surrogate = sourceScopedEventId('bad\ud800', 'x');
    expect(surrogate).toMatch(/^src:~[0-9a-f]{64}$/);
    expect(surrogate).not.toBe(sourceScopedEventId('bad\udc00', 'x'));
    for (const id of [long, surrogate, sourceScopedEventId('café ☕', 'x')])
      expect(EventId.safeParse(id).success).toBe(true);
  });

  test('are reserved: nobody posts an id with the prefix', () => {
    expect(reservedEventIdReason('src:shop:order-42')).toMatch(/reserved for the events of source-scoped ingest keys/);
    expect(reservedEventIdReason('srcx')).toBeUndefined();
  });
});
