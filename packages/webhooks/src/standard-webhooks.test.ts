import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { signStandardWebhook } from './standard-webhooks';
import { WebhookSourceConfig } from './source-config';
import { verifyWebhook } from './verify';
import { verificationError } from './test-support';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER_SECRET = 'whsec_c2VjcmV0LWZyb20tYW5vdGhlci1zZW5kZXI=';
const NOW = new Date('2026-03-01T09:00:00Z');
const BODY = JSON.stringify({ type: 'invoice.paid', timestamp: '2026-03-01T08:59:58Z', data: { invoice: 'in_1' } });
const config = WebhookSourceConfig.parse({ scheme: 'standard_webhooks', name: 'billing', secret: SECRET });

// The reference library checks timestamps against the system clock; pin it to `now`.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Standard Webhooks verification', () => {
  test('a delivery signed with signStandardWebhook verifies', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_1', at: NOW });
    expect(() => verifyWebhook(config, headers, BODY, NOW)).not.toThrow();
  });

  test("a signature produced by the reference library's Webhook.sign verifies", () => {
    const signedAt = new Date(NOW.getTime() - 30_000);
    const headers = {
      'webhook-id': 'msg_2',
      'webhook-timestamp': String(signedAt.getTime() / 1000),
      'webhook-signature': new Webhook(SECRET).sign('msg_2', signedAt, BODY),
    };
    expect(() => verifyWebhook(config, headers, Buffer.from(BODY), NOW)).not.toThrow();
  });

  test('a body that is not JSON still verifies, since reading it is the job of extraction', () => {
    const headers = signStandardWebhook(SECRET, 'not json', { id: 'msg_3', at: NOW });
    expect(() => verifyWebhook(config, headers, 'not json', NOW)).not.toThrow();
  });

  test('a signature header listing a rotated-out signature and a matching one verifies', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_4', at: NOW });
    const old = new Webhook(OTHER_SECRET).sign('msg_4', NOW, BODY);
    expect(() =>
      verifyWebhook(config, { ...headers, 'webhook-signature': `${old} ${headers['webhook-signature']}` }, BODY, NOW),
    ).not.toThrow();
  });

  test('a delivery with a tampered body is refused as invalid_signature', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_5', at: NOW });
    const tampered = BODY.replace('in_1', 'in_2');
    expect(verificationError(() => verifyWebhook(config, headers, tampered, NOW)).code).toBe('invalid_signature');
  });

  test('a delivery whose webhook-id was changed after signing is refused as invalid_signature', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_6', at: NOW });
    expect(verificationError(() => verifyWebhook(config, { ...headers, 'webhook-id': 'msg_7' }, BODY, NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('a delivery signed with another secret is refused as invalid_signature', () => {
    const headers = signStandardWebhook(OTHER_SECRET, BODY, { id: 'msg_8', at: NOW });
    expect(verificationError(() => verifyWebhook(config, headers, BODY, NOW)).code).toBe('invalid_signature');
  });

  test('the refusal message names the header but never the secret or the expected signature', () => {
    const headers = signStandardWebhook(OTHER_SECRET, BODY, { id: 'msg_9', at: NOW });
    const expected = signStandardWebhook(SECRET, BODY, { id: 'msg_9', at: NOW })['webhook-signature'];
    const error = verificationError(() => verifyWebhook(config, headers, BODY, NOW));
    expect(error.header).toBe('webhook-signature');
    for (const secretish of [SECRET, SECRET.slice('whsec_'.length), expected, expected.slice('v1,'.length)]) {
      expect(error.message).not.toContain(secretish);
    }
  });

  test('a delivery signed six minutes ago is refused as stale_timestamp', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_10', at: new Date(NOW.getTime() - 6 * 60_000) });
    expect(verificationError(() => verifyWebhook(config, headers, BODY, NOW)).code).toBe('stale_timestamp');
  });

  test('a delivery timestamped six minutes in the future is refused as stale_timestamp', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_11', at: new Date(NOW.getTime() + 6 * 60_000) });
    expect(verificationError(() => verifyWebhook(config, headers, BODY, NOW)).code).toBe('stale_timestamp');
  });

  test('a tolerance tighter than five minutes is enforced against now', () => {
    const strict = WebhookSourceConfig.parse({
      scheme: 'standard_webhooks',
      name: 'billing',
      secret: SECRET,
      tolerance: '1m',
    });
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_12', at: new Date(NOW.getTime() - 2 * 60_000) });
    expect(() => verifyWebhook(config, headers, BODY, NOW)).not.toThrow();
    expect(verificationError(() => verifyWebhook(strict, headers, BODY, NOW)).code).toBe('stale_timestamp');
  });

  test('a delivery fresh against now but over five minutes from the system clock is refused as stale_timestamp', () => {
    // The reference library checks the system clock itself; `now` cannot widen its window.
    const later = new Date(NOW.getTime() + 10 * 60_000);
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_19', at: later });
    expect(verificationError(() => verifyWebhook(config, headers, BODY, later)).code).toBe('stale_timestamp');
  });

  test('a delivery without webhook-signature is refused as missing_signature', () => {
    const { 'webhook-signature': _omitted, ...headers } = signStandardWebhook(SECRET, BODY, { id: 'msg_13', at: NOW });
    expect(verificationError(() => verifyWebhook(config, headers, BODY, NOW)).code).toBe('missing_signature');
  });

  test('an empty webhook-signature is refused as missing_signature', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_14', at: NOW });
    expect(
      verificationError(() => verifyWebhook(config, { ...headers, 'webhook-signature': '' }, BODY, NOW)).code,
    ).toBe('missing_signature');
  });

  test.each(['webhook-id', 'webhook-timestamp'] as const)(
    'a delivery without %s is refused as missing_header naming it',
    (name) => {
      const headers: Record<string, string | undefined> = {
        ...signStandardWebhook(SECRET, BODY, { id: 'msg_15', at: NOW }),
      };
      headers[name] = undefined;
      const error = verificationError(() => verifyWebhook(config, headers, BODY, NOW));
      expect(error.code).toBe('missing_header');
      expect(error.header).toBe(name);
    },
  );

  test('a webhook-timestamp that is not whole Unix seconds is refused as invalid_header', () => {
    const headers = signStandardWebhook(SECRET, BODY, { id: 'msg_16', at: NOW });
    const timestamp = new Date(NOW).toISOString();
    expect(
      verificationError(() => verifyWebhook(config, { ...headers, 'webhook-timestamp': timestamp }, BODY, NOW)).code,
    ).toBe('invalid_header');
  });

  test('header names are matched case-insensitively', () => {
    const signed = signStandardWebhook(SECRET, BODY, { id: 'msg_17', at: NOW });
    const headers = {
      'Webhook-Id': signed['webhook-id'],
      'WEBHOOK-TIMESTAMP': signed['webhook-timestamp'],
      'Webhook-Signature': [signed['webhook-signature']],
    };
    expect(() => verifyWebhook(config, headers, BODY, NOW)).not.toThrow();
  });

  test('a signature header sent twice with different values is refused as invalid_header', () => {
    const signed = signStandardWebhook(SECRET, BODY, { id: 'msg_18', at: NOW });
    const headers = { ...signed, 'Webhook-Signature': 'v1,AAAA' };
    expect(verificationError(() => verifyWebhook(config, headers, BODY, NOW)).code).toBe('invalid_header');
  });
});
