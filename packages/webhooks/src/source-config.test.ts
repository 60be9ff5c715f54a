import { describe, expect, test } from 'vitest';
import { WebhookSourceConfig } from './source-config';

describe('webhook source configs', () => {
  test('a minimal Standard Webhooks source gets the Standard Webhooks defaults', () => {
    expect(
      WebhookSourceConfig.parse({
        scheme: 'standard_webhooks',
        name: 'billing',
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      }),
    ).toEqual({
      scheme: 'standard_webhooks',
      name: 'billing',
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      event_type_from_unsigned_header: false,
      tolerance: '5m',
      event_id: [{ header: 'webhook-id' }],
      event_type: { from: { body: 'type' } },
    });
  });

  test('a minimal GitHub source reads X-GitHub-Delivery and X-GitHub-Event with the action', () => {
    expect(WebhookSourceConfig.parse({ scheme: 'github', name: 'github', secret: 's' })).toEqual({
      scheme: 'github',
      name: 'github',
      secret: 's',
      event_type_from_unsigned_header: false,
      allow_replay_without_timestamp: false,
      event_id: [{ header: 'X-GitHub-Delivery' }],
      event_type: { from: { header: 'X-GitHub-Event' }, suffix: { body: 'action' } },
    });
  });

  test('a minimal HMAC source signs bare hex in X-Signature and reads the body id, then Idempotency-Key', () => {
    expect(WebhookSourceConfig.parse({ scheme: 'hmac_sha256', name: 'shop', secret: 's' })).toEqual({
      scheme: 'hmac_sha256',
      name: 'shop',
      secret: 's',
      signature_header: 'X-Signature',
      signature_prefix: '',
      tolerance: '5m',
      event_type_from_unsigned_header: false,
      allow_replay_without_timestamp: false,
      event_id: [{ body: 'id' }, { header: 'Idempotency-Key' }],
      event_type: { from: { body: 'type' } },
    });
  });

  test('defaults are fresh objects, so mutating one parsed config cannot leak into another', () => {
    const first = WebhookSourceConfig.parse({ scheme: 'github', name: 'a', secret: 's' });
    first.event_id.push({ body: 'id' });
    expect(WebhookSourceConfig.parse({ scheme: 'github', name: 'b', secret: 's' }).event_id).toEqual([
      { header: 'X-GitHub-Delivery' },
    ]);
  });

  test.each(['whsec_', 'whsec_abc', 'whsec_not base64!', 'plain-text-password'])(
    'a Standard Webhooks secret %j is rejected',
    (secret) => {
      expect(WebhookSourceConfig.safeParse({ scheme: 'standard_webhooks', name: 'billing', secret }).success).toBe(
        false,
      );
    },
  );

  test('a rejected secret is not echoed in the validation issues', () => {
    const secret = 'whsec_definitely*not*base64';
    const result = WebhookSourceConfig.safeParse({ scheme: 'standard_webhooks', name: 'billing', secret });
    expect(JSON.stringify(result.error?.issues)).not.toContain('definitely');
  });

  test('a Standard Webhooks tolerance above the five minutes of the library is rejected', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(
      WebhookSourceConfig.safeParse({ scheme: 'standard_webhooks', name: 'b', secret, tolerance: '10m' }).success,
    ).toBe(false);
    expect(
      WebhookSourceConfig.safeParse({ scheme: 'standard_webhooks', name: 'b', secret, tolerance: '300s' }).success,
    ).toBe(true);
  });

  test.each(['Billing', 'has space', '-leading', 'a/b', ''])(
    'a source name %j that is not a URL slug is rejected',
    (name) => {
      expect(WebhookSourceConfig.safeParse({ scheme: 'github', name, secret: 's' }).success).toBe(false);
    },
  );

  test('unknown fields are rejected rather than silently ignored', () => {
    expect(
      WebhookSourceConfig.safeParse({ scheme: 'github', name: 'gh', secret: 's', signature_header: 'X-Sig' }).success,
    ).toBe(false);
  });

  test('an event id location must be a header or a body path, not both', () => {
    const config = { scheme: 'hmac_sha256', name: 'shop', secret: 's', event_id: [{ header: 'X-Id', body: 'id' }] };
    expect(WebhookSourceConfig.safeParse(config).success).toBe(false);
  });
});

describe('tolerance values that are not durations', () => {
  test('are refused as invalid input with the duration message, never thrown as an error (a 500)', () => {
    for (const scheme of ['hmac_sha256', 'standard_webhooks'] as const) {
      for (const tolerance of ['', 'soon', '5 minutes', '99999999999s']) {
        const parsed = WebhookSourceConfig.safeParse({
          scheme,
          name: 'src',
          secret: scheme === 'standard_webhooks' ? `whsec_${Buffer.alloc(32, 7).toString('base64')}` : 'x'.repeat(32),
          tolerance,
          ...(scheme === 'hmac_sha256' ? { signature_header: 'X-Signature', timestamp_header: 'X-Timestamp' } : {}),
        });
        expect(parsed.success, `${scheme} ${JSON.stringify(tolerance)}`).toBe(false);
        expect(parsed.error?.issues.some((issue) => issue.path.join('.') === 'tolerance')).toBe(true);
      }
    }
  });

  test('text the store cannot keep (a NUL character) is refused by the schema, naming the field', () => {
    const nul = '\u0000';
    const parsed = WebhookSourceConfig.safeParse({
      scheme: 'hmac_sha256',
      name: 'nul',
      secret: `secret${nul}0123456789`,
      event_source: `shop${nul}`,
      event_id: [{ body: `data.${nul}id` }],
    });
    expect(parsed.error?.issues.map((issue) => issue.path.join('.')).sort()).toEqual([
      'event_id.0.body',
      'event_source',
      'secret',
    ]);
  });
});
