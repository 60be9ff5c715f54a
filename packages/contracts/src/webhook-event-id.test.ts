import { describe, expect, test } from 'vitest';
import { EventId } from './event-envelope';
import { reservedEventIdReason, webhookDeliveryIdOf, webhookEventId } from './ids';

describe('webhook event ids', () => {
  test('are the delivery id under wh:{source}:', () => {
    expect(webhookEventId('github', '72d3162e-cc78-11e3-81ab-4c9367dc0958')).toBe(
      'wh:github:72d3162e-cc78-11e3-81ab-4c9367dc0958',
    );
  });

  test('the wh: prefix is reserved, so POST /v1/events cannot pre-claim a delivery id', () => {
    expect(reservedEventIdReason('wh:github:72d3162e')).toMatch(/reserved for webhook deliveries/);
    expect(reservedEventIdReason('whatever')).toBeUndefined();
  });

  test('an id that would pass 200 characters becomes a digest, deterministic and a valid event id', () => {
    const source = 'a'.repeat(64);
    const id = webhookEventId(source, 'd'.repeat(200));
    expect(id).toBe(webhookEventId(source, 'd'.repeat(200)));
    expect(id).toMatch(new RegExp(`^wh:${source}:~[0-9a-f]{64}$`));
    expect(EventId.safeParse(id).success).toBe(true);
    expect(webhookEventId(source, 'd'.repeat(200 - 68))).toHaveLength(200);
  });

  test('the delivery id reads back from an id of the same source only', () => {
    expect(webhookDeliveryIdOf('github', webhookEventId('github', 'a:b:c'))).toBe('a:b:c');
    expect(webhookDeliveryIdOf('gitlab', webhookEventId('github', 'a:b:c'))).toBeUndefined();
    expect(webhookDeliveryIdOf('git', webhookEventId('github', 'x'))).toBeUndefined();
    expect(webhookDeliveryIdOf('github', 'wh:github:')).toBeUndefined();
    expect(webhookDeliveryIdOf('github', 'evt_x')).toBeUndefined();
  });
});
