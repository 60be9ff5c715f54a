import { EventEnvelopeInput, EventId } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { extractEvent } from './extract';
import { WebhookSourceConfig } from './source-config';
import { payloadError } from './test-support';

const RECEIVED_AT = new Date('2026-03-01T09:00:00Z');

const standard = WebhookSourceConfig.parse({
  scheme: 'standard_webhooks',
  name: 'billing',
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});
const github = WebhookSourceConfig.parse({ scheme: 'github', name: 'github', secret: 'github-secret' });
const hmac = WebhookSourceConfig.parse({ scheme: 'hmac_sha256', name: 'shop', secret: 'hmac-secret' });

describe('extraction defaults for Standard Webhooks', () => {
  test('the id comes from webhook-id, the type from body.type and occurred_at from body.timestamp', () => {
    const body = { type: 'invoice.paid', timestamp: '2026-03-01T08:59:58.123456Z', data: { invoice: 'in_1' } };
    const headers = {
      'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
      'webhook-timestamp': '1772355590',
      'webhook-signature': 'v1,x',
    };
    expect(extractEvent(standard, headers, JSON.stringify(body), RECEIVED_AT)).toEqual({
      envelope: {
        event_id: 'wh:billing:msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
        event_type: 'invoice.paid',
        source: 'webhook:billing',
        occurred_at: '2026-03-01T08:59:58.123456Z',
        data: body,
      },
      idOrigin: 'delivery_id',
    });
  });

  test('without a body timestamp, occurred_at is the webhook-timestamp', () => {
    const headers = { 'Webhook-Id': 'msg_1', 'Webhook-Timestamp': '1772355590' };
    const { envelope } = extractEvent(standard, headers, '{"type":"invoice.paid"}', RECEIVED_AT);
    expect(envelope.occurred_at).toBe('2026-03-01T08:59:50.000Z');
  });
});

describe('extraction defaults for GitHub', () => {
  const headers = { 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-github-event': 'pull_request' };

  test('the id is X-GitHub-Delivery and the type joins X-GitHub-Event with the action', () => {
    const body = JSON.stringify({ action: 'opened', id: 99, pull_request: { number: 7 } });
    const { envelope, idOrigin } = extractEvent(github, headers, Buffer.from(body), RECEIVED_AT);
    expect(envelope.event_id).toBe('wh:github:72d3162e-cc78-11e3-81ab-4c9367dc0958');
    expect(idOrigin).toBe('delivery_id');
    expect(envelope.event_type).toBe('pull_request.opened');
    expect(envelope.source).toBe('webhook:github');
  });

  test('an event without an action keeps the bare event name', () => {
    const { envelope } = extractEvent(
      github,
      { ...headers, 'x-github-event': 'push' },
      '{"ref":"refs/heads/main"}',
      RECEIVED_AT,
    );
    expect(envelope.event_type).toBe('push');
  });

  test('occurred_at is the receive time, since GitHub signs no timestamp', () => {
    expect(extractEvent(github, headers, '{}', RECEIVED_AT).envelope.occurred_at).toBe('2026-03-01T09:00:00.000Z');
  });

  test('a source configured without the suffix uses the bare event name', () => {
    const bare = WebhookSourceConfig.parse({ ...github, event_type: { from: { header: 'X-GitHub-Event' } } });
    expect(extractEvent(bare, headers, '{"action":"opened"}', RECEIVED_AT).envelope.event_type).toBe('pull_request');
  });

  test('a GitHub delivery without X-GitHub-Event is refused as missing_event_type', () => {
    const error = payloadError(() => extractEvent(github, { 'x-github-delivery': 'd1' }, '{}', RECEIVED_AT));
    expect(error.code).toBe('missing_event_type');
    expect(error.message).toContain('X-GitHub-Event');
  });
});

describe('extraction defaults for generic HMAC', () => {
  test('an id in the body wins over the Idempotency-Key header', () => {
    const result = extractEvent(
      hmac,
      { 'idempotency-key': 'key-1' },
      '{"id":"evt_1","type":"order.paid"}',
      RECEIVED_AT,
    );
    expect(result.envelope.event_id).toBe('wh:shop:evt_1');
    expect(result.idOrigin).toBe('body');
  });

  test('without a body id the Idempotency-Key header is the id', () => {
    const result = extractEvent(hmac, { 'Idempotency-Key': 'key-1' }, '{"type":"order.paid"}', RECEIVED_AT);
    expect(result.envelope.event_id).toBe('wh:shop:key-1');
    expect(result.idOrigin).toBe('idempotency_key');
  });

  test('without any id the envelope has none and the origin is assigned', () => {
    const result = extractEvent(hmac, {}, '{"type":"order.paid","id":null}', RECEIVED_AT);
    expect(result.idOrigin).toBe('assigned');
    expect(result.envelope).not.toHaveProperty('event_id');
  });

  test('an integer body id becomes a string id', () => {
    expect(extractEvent(hmac, {}, '{"id":12345,"type":"order.paid"}', RECEIVED_AT).envelope.event_id).toBe(
      'wh:shop:12345',
    );
  });

  test('occurred_at is the timestamp header when the source has one, else the receive time', () => {
    const timestamped = WebhookSourceConfig.parse({ ...hmac, timestamp_header: 'X-Timestamp' });
    const body = '{"type":"order.paid"}';
    expect(extractEvent(timestamped, { 'x-timestamp': '1772355590' }, body, RECEIVED_AT).envelope.occurred_at).toBe(
      '2026-03-01T08:59:50.000Z',
    );
    expect(extractEvent(hmac, { 'x-timestamp': '1772355590' }, body, RECEIVED_AT).envelope.occurred_at).toBe(
      '2026-03-01T09:00:00.000Z',
    );
  });
});

describe('event ids of webhook deliveries', () => {
  test('are namespaced by source, so two sources with the same delivery id are two events', () => {
    const other = WebhookSourceConfig.parse({ ...hmac, name: 'other-shop' });
    const body = '{"id":"evt_1","type":"order.paid"}';
    expect(extractEvent(hmac, {}, body, RECEIVED_AT).envelope.event_id).toBe('wh:shop:evt_1');
    expect(extractEvent(other, {}, body, RECEIVED_AT).envelope.event_id).toBe('wh:other-shop:evt_1');
  });

  test('a delivery id too long for the prefix becomes a stable digest within the 200-character limit', () => {
    const long = 'x'.repeat(200);
    const body = JSON.stringify({ id: long, type: 'order.paid' });
    const first = extractEvent(hmac, {}, body, RECEIVED_AT).envelope.event_id;
    expect(first).toMatch(/^wh:shop:~[0-9a-f]{64}$/);
    expect(extractEvent(hmac, {}, body, RECEIVED_AT).envelope.event_id).toBe(first);
    expect(EventId.safeParse(first).success).toBe(true);
  });
});

describe('configured locations', () => {
  test('the id and type can come from a nested body path and a custom header, and event_source overrides the source', () => {
    const config = WebhookSourceConfig.parse({
      scheme: 'hmac_sha256',
      name: 'crm',
      secret: 's',
      event_id: [{ body: 'meta.events.0.uid' }],
      event_type: { from: { header: 'X-Crm-Event' } },
      event_source: 'crm.example.com',
    });
    const body = { meta: { events: [{ uid: 'u-1' }] } };
    const result = extractEvent(config, { 'x-crm-event': 'contact.created' }, JSON.stringify(body), RECEIVED_AT);
    expect(result).toEqual({
      envelope: {
        event_id: 'wh:crm:u-1',
        event_type: 'contact.created',
        source: 'crm.example.com',
        occurred_at: RECEIVED_AT.toISOString(),
        data: body,
      },
      idOrigin: 'body',
    });
  });

  test('a body path does not reach inherited properties', () => {
    const config = WebhookSourceConfig.parse({ ...hmac, event_id: [{ body: 'constructor.name' }] });
    expect(extractEvent(config, {}, '{"type":"order.paid"}', RECEIVED_AT).idOrigin).toBe('assigned');
  });

  test('every extracted envelope is a valid EventEnvelopeInput', () => {
    const { envelope } = extractEvent(
      github,
      { 'x-github-event': 'issues', 'x-github-delivery': 'd-1' },
      '{"action":"closed"}',
      RECEIVED_AT,
    );
    expect(EventEnvelopeInput.parse(envelope)).toEqual(envelope);
  });
});

describe('payloads that cannot become an event', () => {
  test('a body that is not JSON is refused as invalid_json', () => {
    expect(payloadError(() => extractEvent(hmac, {}, 'id=evt_1&type=order.paid', RECEIVED_AT)).code).toBe(
      'invalid_json',
    );
  });

  test.each(['[]', '"order.paid"', 'null', '42'])(
    'a JSON body %s that is not an object is refused as not_an_object',
    (body) => {
      expect(payloadError(() => extractEvent(hmac, {}, body, RECEIVED_AT)).code).toBe('not_an_object');
    },
  );

  test('a body without a type is refused as missing_event_type', () => {
    const error = payloadError(() => extractEvent(hmac, {}, '{"id":"evt_1"}', RECEIVED_AT));
    expect(error.code).toBe('missing_event_type');
    expect(error.message).toContain('body.type');
  });

  test.each(['{"type":"order paid"}', '{"type":42}', '{"type":""}'])(
    'a body %s is refused as invalid_event_type',
    (body) => {
      expect(payloadError(() => extractEvent(hmac, {}, body, RECEIVED_AT)).code).toBe('invalid_event_type');
    },
  );

  test.each([
    '{"type":"t","id":"evt 1"}',
    '{"type":"t","id":1.5e300}',
    '{"type":"t","id":{"v":1}}',
    '{"type":"t","id":""}',
  ])('a body %s is refused as invalid_event_id rather than falling back to another id', (body) => {
    expect(payloadError(() => extractEvent(hmac, { 'idempotency-key': 'key-1' }, body, RECEIVED_AT)).code).toBe(
      'invalid_event_id',
    );
  });
});
