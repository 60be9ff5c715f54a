import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { signHmac } from './hmac';
import { HmacSha256SourceConfig, WebhookSourceConfig } from './source-config';
import { verificationError } from './test-support';
import { verifyWebhook } from './verify';

const NOW = new Date('2026-03-01T09:00:00Z');
const SECRET = 'shared-hmac-secret';
const BODY = JSON.stringify({ id: 'evt_1', type: 'invoice.paid', amount: 100 });

const plain = HmacSha256SourceConfig.parse({ scheme: 'hmac_sha256', name: 'billing', secret: SECRET });
const timestamped = HmacSha256SourceConfig.parse({
  scheme: 'hmac_sha256',
  name: 'billing',
  secret: SECRET,
  signature_header: 'X-Billing-Signature',
  signature_prefix: 'sha256=',
  timestamp_header: 'X-Billing-Timestamp',
  tolerance: '2m',
});

const minutesFromNow = (minutes: number) => new Date(NOW.getTime() + minutes * 60_000);

describe('generic HMAC verification', () => {
  test('signHmac produces the bare hex HMAC-SHA256 of the body in X-Signature by default', () => {
    const expected = createHmac('sha256', SECRET).update(BODY).digest('hex');
    expect(signHmac(plain, BODY)).toEqual({ 'X-Signature': expected });
  });

  test('a delivery signed with signHmac verifies, as a string or as bytes', () => {
    const headers = signHmac(plain, BODY);
    expect(() => verifyWebhook(plain, headers, BODY, NOW)).not.toThrow();
    expect(() => verifyWebhook(plain, headers, Buffer.from(BODY), NOW)).not.toThrow();
  });

  test('an HMAC delivery with a tampered body is refused as invalid_signature', () => {
    const headers = signHmac(plain, BODY);
    expect(verificationError(() => verifyWebhook(plain, headers, BODY.replace('100', '1000'), NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('an HMAC delivery signed with another secret is refused as invalid_signature', () => {
    const headers = signHmac({ ...plain, secret: 'another-secret' }, BODY);
    const error = verificationError(() => verifyWebhook(plain, headers, BODY, NOW));
    expect(error.code).toBe('invalid_signature');
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain(signHmac(plain, BODY)['X-Signature']);
  });

  test('an HMAC delivery without its signature header is refused as missing_signature', () => {
    const error = verificationError(() => verifyWebhook(plain, { 'content-type': 'application/json' }, BODY, NOW));
    expect(error.code).toBe('missing_signature');
    expect(error.header).toBe('X-Signature');
  });

  test('a truncated HMAC signature is refused as invalid_signature', () => {
    const truncated = signHmac(plain, BODY)['X-Signature']!.slice(0, 32);
    expect(verificationError(() => verifyWebhook(plain, { 'x-signature': truncated }, BODY, NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('a configured signature prefix is required', () => {
    const signed = signHmac(timestamped, BODY, NOW);
    const bare = signed['X-Billing-Signature']!.slice('sha256='.length);
    expect(signed['X-Billing-Signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(
      verificationError(() => verifyWebhook(timestamped, { ...signed, 'X-Billing-Signature': bare }, BODY, NOW)).code,
    ).toBe('invalid_signature');
  });

  test('header names are matched case-insensitively, whichever case the config uses', () => {
    const lowerConfig = WebhookSourceConfig.parse({
      ...timestamped,
      signature_header: 'x-billing-signature',
      timestamp_header: 'x-billing-timestamp',
    });
    const signed = signHmac(timestamped, BODY, NOW);
    const shouted = {
      'X-BILLING-SIGNATURE': signed['X-Billing-Signature'],
      'X-BILLING-TIMESTAMP': signed['X-Billing-Timestamp'],
    };
    expect(() => verifyWebhook(timestamped, shouted, BODY, NOW)).not.toThrow();
    expect(() => verifyWebhook(lowerConfig, signed, BODY, NOW)).not.toThrow();
  });

  test('a signature header sent twice with different values is refused as invalid_header', () => {
    const signed = signHmac(plain, BODY)['X-Signature']!;
    expect(
      verificationError(() => verifyWebhook(plain, { 'x-signature': [signed, 'ab'.repeat(32)] }, BODY, NOW)).code,
    ).toBe('invalid_header');
  });
});

describe('generic HMAC verification with a timestamp header', () => {
  test('the signed content is the timestamp, a dot, then the body', () => {
    const seconds = String(NOW.getTime() / 1000);
    const expected = createHmac('sha256', SECRET).update(`${seconds}.${BODY}`).digest('hex');
    expect(signHmac(timestamped, BODY, NOW)).toEqual({
      'X-Billing-Timestamp': seconds,
      'X-Billing-Signature': `sha256=${expected}`,
    });
  });

  test('a delivery signed within the tolerance verifies', () => {
    const headers = signHmac(timestamped, BODY, minutesFromNow(-1));
    expect(() => verifyWebhook(timestamped, headers, BODY, NOW)).not.toThrow();
  });

  test('a delivery signed before the tolerance is refused as stale_timestamp', () => {
    const headers = signHmac(timestamped, BODY, minutesFromNow(-3));
    const error = verificationError(() => verifyWebhook(timestamped, headers, BODY, NOW));
    expect(error.code).toBe('stale_timestamp');
    expect(error.header).toBe('X-Billing-Timestamp');
  });

  test('a delivery timestamped beyond the tolerance in the future is refused as stale_timestamp', () => {
    const headers = signHmac(timestamped, BODY, minutesFromNow(3));
    expect(verificationError(() => verifyWebhook(timestamped, headers, BODY, NOW)).code).toBe('stale_timestamp');
  });

  test('a replay with a fresh timestamp but the old signature is refused as invalid_signature', () => {
    const headers = signHmac(timestamped, BODY, minutesFromNow(-1));
    const replayed = { ...headers, 'X-Billing-Timestamp': String(NOW.getTime() / 1000) };
    expect(verificationError(() => verifyWebhook(timestamped, replayed, BODY, NOW)).code).toBe('invalid_signature');
  });

  test('a delivery without the timestamp header is refused as missing_header', () => {
    const { 'X-Billing-Timestamp': _omitted, ...headers } = signHmac(timestamped, BODY, NOW);
    const error = verificationError(() => verifyWebhook(timestamped, headers, BODY, NOW));
    expect(error.code).toBe('missing_header');
    expect(error.header).toBe('X-Billing-Timestamp');
  });

  test('a timestamp in milliseconds is refused as invalid_header', () => {
    const headers = signHmac(timestamped, BODY, NOW);
    const millis = { ...headers, 'X-Billing-Timestamp': `${NOW.getTime()}.5` };
    expect(verificationError(() => verifyWebhook(timestamped, millis, BODY, NOW)).code).toBe('invalid_header');
  });
});
