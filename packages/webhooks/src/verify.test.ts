import { createHash } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { observeHmac } from './digest';
import { signGithub } from './github';
import { signHmac } from './hmac';
import { HmacSha256SourceConfig, WebhookSourceConfig } from './source-config';
import { signStandardWebhook } from './standard-webhooks';
import { verificationError } from './test-support';
import { refuseUnknownSource, unverifiedDelivery, verifyDelivery, verifyWebhook } from './verify';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const NOW = new Date('2026-03-01T09:00:00Z');
const body = '{"type":"order.paid","id":"o1"}';

describe('what verification proves', () => {
  test('for GitHub the signed bytes are the body, whatever the unsigned headers say', () => {
    const config = WebhookSourceConfig.parse({ scheme: 'github', name: 'gh', secret: 'github-secret-0123456789' });
    const headers = { ...signGithub(config.secret, body), 'x-github-event': 'issues', 'x-github-delivery': 'd1' };
    const first = verifyWebhook(config, headers, body, NOW);
    const replayed = verifyWebhook(
      config,
      { ...headers, 'x-github-event': 'push', 'x-github-delivery': 'd2' },
      body,
      NOW,
    );
    expect(first.signedSha256).toBe(sha256(body));
    expect(replayed.signedSha256).toBe(first.signedSha256);
  });

  test('for HMAC with a timestamp the signed bytes are the timestamp, a dot and the body', () => {
    const config = HmacSha256SourceConfig.parse({
      scheme: 'hmac_sha256',
      name: 'shop',
      secret: 'hmac-secret-0123456789',
      timestamp_header: 'X-Timestamp',
    });
    const headers = signHmac(config, body, NOW);
    expect(verifyWebhook(config, headers, body, NOW).signedSha256).toBe(sha256(`${headers['X-Timestamp']}.${body}`));
  });

  test('for Standard Webhooks the signed bytes include the id and timestamp, so each attempt differs', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const config = WebhookSourceConfig.parse({ scheme: 'standard_webhooks', name: 'sw', secret });
    const now = new Date();
    const headers = signStandardWebhook(secret, body, { id: 'msg_1', at: now });
    expect(verifyWebhook(config, headers, body, now).signedSha256).toBe(
      sha256(`msg_1.${headers['webhook-timestamp']}.${body}`),
    );
  });
});

describe('refusals', () => {
  test('a delivery to an unknown source is refused with the very error every unverified delivery gets', () => {
    const error = verificationError(() => refuseUnknownSource(body));
    expect({ code: error.code, message: error.message, header: error.header }).toEqual({
      code: unverifiedDelivery().code,
      message: unverifiedDelivery().message,
      header: undefined,
    });
  });
});

describe('the work a refusal costs', () => {
  let stopObserving: (() => void) | undefined;
  afterEach(() => stopObserving?.());

  /** The sizes of the HMACs one verification computed, and whether it verified. */
  function work(
    config: WebhookSourceConfig | undefined,
    headers: Record<string, string>,
    rawBody: Buffer,
    now: Date,
  ): number[] {
    const sizes: number[] = [];
    stopObserving = observeHmac((bytes) => sizes.push(bytes));
    try {
      verifyDelivery(config, headers, rawBody, now);
    } catch {
      // Refusals are what is measured here.
    }
    stopObserving();
    return sizes;
  }

  const big = Buffer.alloc(1 << 20, 'a');
  const now = new Date();
  const known = {
    github: WebhookSourceConfig.parse({ scheme: 'github', name: 'gh', secret: 'github-secret-0123456789' }),
    hmac: WebhookSourceConfig.parse({
      scheme: 'hmac_sha256',
      name: 'shop',
      secret: 'hmac-secret-0123456789',
      timestamp_header: 'X-Timestamp',
    }),
    standard: WebhookSourceConfig.parse({
      scheme: 'standard_webhooks',
      name: 'sw',
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    }),
  };
  const headerSets: Record<string, Record<string, string>> = {
    none: {},
    'GitHub-shaped': signGithub('another-secret-0123456789', big),
    'HMAC-shaped': signHmac(
      {
        secret: 'another-secret-0123456789',
        signature_header: 'X-Signature',
        signature_prefix: '',
        timestamp_header: 'X-Timestamp',
      },
      big,
      now,
    ),
    'Standard-Webhooks-shaped': signStandardWebhook('whsec_c2VjcmV0LWZyb20tYW5vdGhlci1zZW5kZXI=', big, {
      id: 'msg_1',
      at: now,
    }),
  };

  test('every refused delivery costs one HMAC over its whole body, whether or not the source exists and whatever headers it sent', () => {
    for (const [what, headers] of Object.entries(headerSets)) {
      const unknown = work(undefined, headers, big, now);
      expect(unknown, `unknown source, ${what} headers`).toHaveLength(1);
      expect(unknown[0]).toBeGreaterThanOrEqual(big.length);
      for (const [scheme, config] of Object.entries(known)) {
        const sizes = work(config, headers, big, now);
        expect(sizes, `${scheme} source, ${what} headers`).toHaveLength(1);
        expect(sizes[0]).toBeGreaterThanOrEqual(big.length);
      }
    }
  });

  test('a delivery that verifies costs the same one HMAC', () => {
    const headers = { ...signHmac(known.hmac as HmacSha256SourceConfig, big, now) };
    const sizes = work(known.hmac, headers, big, now);
    expect(sizes).toHaveLength(1);
    expect(() => verifyDelivery(known.hmac, headers, big, now)).not.toThrow();
  });
});
