import { describe, expect, test } from 'vitest';
import { signGithub } from './github';
import { WebhookSourceConfig } from './source-config';
import { verificationError } from './test-support';
import { verifyWebhook } from './verify';

const NOW = new Date('2026-03-01T09:00:00Z');
const SECRET = 'github-webhook-secret';
const BODY = JSON.stringify({ action: 'opened', pull_request: { number: 7 } });
const config = WebhookSourceConfig.parse({ scheme: 'github', name: 'github', secret: SECRET });

// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const VECTOR = {
  secret: "It's a Secret to Everybody",
  payload: 'Hello, World!',
  signature: 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
};

describe('GitHub verification', () => {
  test("GitHub's documented test vector signs to the documented signature", () => {
    expect(signGithub(VECTOR.secret, VECTOR.payload)).toEqual({ 'X-Hub-Signature-256': VECTOR.signature });
  });

  test("GitHub's documented test vector verifies", () => {
    const vectorConfig = WebhookSourceConfig.parse({ scheme: 'github', name: 'github', secret: VECTOR.secret });
    expect(() =>
      verifyWebhook(vectorConfig, { 'x-hub-signature-256': VECTOR.signature }, Buffer.from(VECTOR.payload), NOW),
    ).not.toThrow();
  });

  test('a delivery signed with signGithub verifies, as a string or as bytes', () => {
    const headers = signGithub(SECRET, BODY);
    expect(() => verifyWebhook(config, headers, BODY, NOW)).not.toThrow();
    expect(() => verifyWebhook(config, headers, Buffer.from(BODY), NOW)).not.toThrow();
  });

  test('a GitHub delivery with a tampered body is refused as invalid_signature', () => {
    const headers = signGithub(SECRET, BODY);
    expect(verificationError(() => verifyWebhook(config, headers, BODY.replace('7', '8'), NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('a GitHub delivery signed with another secret is refused as invalid_signature', () => {
    const headers = signGithub('another-secret', BODY);
    expect(verificationError(() => verifyWebhook(config, headers, BODY, NOW)).code).toBe('invalid_signature');
  });

  test('the refusal message never contains the secret or the expected signature', () => {
    const expected = signGithub(SECRET, BODY)['X-Hub-Signature-256'];
    const error = verificationError(() => verifyWebhook(config, signGithub('another-secret', BODY), BODY, NOW));
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain(expected.slice('sha256='.length));
    expect(error.header).toBe('X-Hub-Signature-256');
  });

  test('a GitHub delivery without X-Hub-Signature-256 is refused as missing_signature, even with the legacy SHA-1 header', () => {
    const error = verificationError(() =>
      verifyWebhook(config, { 'x-hub-signature': 'sha1=0123456789abcdef0123456789abcdef01234567' }, BODY, NOW),
    );
    expect(error.code).toBe('missing_signature');
    expect(error.header).toBe('X-Hub-Signature-256');
  });

  test('a signature without the sha256= prefix is refused as invalid_signature', () => {
    const bare = signGithub(SECRET, BODY)['X-Hub-Signature-256'].slice('sha256='.length);
    expect(verificationError(() => verifyWebhook(config, { 'x-hub-signature-256': bare }, BODY, NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('a truncated signature is refused as invalid_signature rather than throwing from timingSafeEqual', () => {
    const truncated = signGithub(SECRET, BODY)['X-Hub-Signature-256'].slice(0, -2);
    expect(verificationError(() => verifyWebhook(config, { 'x-hub-signature-256': truncated }, BODY, NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('a signature with an extra byte is refused as invalid_signature', () => {
    const extended = `${signGithub(SECRET, BODY)['X-Hub-Signature-256']}00`;
    expect(verificationError(() => verifyWebhook(config, { 'x-hub-signature-256': extended }, BODY, NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('a signature that is not hex is refused as invalid_signature', () => {
    const notHex = `sha256=${'zz'.repeat(32)}`;
    expect(verificationError(() => verifyWebhook(config, { 'x-hub-signature-256': notHex }, BODY, NOW)).code).toBe(
      'invalid_signature',
    );
  });

  test('header names are matched case-insensitively and the hex digest in any case', () => {
    const signature = signGithub(SECRET, BODY)['X-Hub-Signature-256'];
    const upperHex = `sha256=${signature.slice('sha256='.length).toUpperCase()}`;
    expect(() => verifyWebhook(config, { 'X-HUB-SIGNATURE-256': signature }, BODY, NOW)).not.toThrow();
    expect(() => verifyWebhook(config, { 'x-hub-signature-256': upperHex }, BODY, NOW)).not.toThrow();
  });
});
