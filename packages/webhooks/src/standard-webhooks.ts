import { parseDurationMs } from '@activity-core/contracts';
import { Webhook } from 'standardwebhooks';
import { digestsEqual, hmacSha256 } from './digest';
import { WebhookVerificationError } from './errors';
import { headerValues, requireHeader, type WebhookHeaders } from './headers';
import type { StandardWebhooksSourceConfig } from './source-config';
import { assertFresh, parseUnixSeconds } from './timestamp';

const ID_HEADER = 'webhook-id';
const TIMESTAMP_HEADER = 'webhook-timestamp';
const SIGNATURE_HEADER = 'webhook-signature';

/** The three headers a Standard Webhooks delivery carries. (A type alias, so it is assignable to `WebhookHeaders`.) */
export type StandardWebhookHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/** The reference library's own tolerance, which it checks against the system clock. */
const LIBRARY_TOLERANCE_MS = 5 * 60_000;

/** The HMAC key of a Standard Webhooks secret: base64, with or without the `whsec_` prefix. */
function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/**
 * Verifies a Standard Webhooks delivery the way the reference library's
 * `Webhook.verify` does: HMAC-SHA256 of `{id}.{timestamp}.{body}` with the
 * base64 secret, compared with each `v1,<base64>` entry of the signature
 * header; the timestamp within the configured tolerance of `now` and, as the
 * library also requires, within five minutes of the system clock. The HMAC
 * is computed before any header is checked (missing ones sign as empty), so
 * every delivery costs the same work whatever its headers (see verifyDelivery);
 * the library itself checks headers first, so it only signs.
 */
export function verifyStandardWebhook(
  config: StandardWebhooksSourceConfig,
  headers: WebhookHeaders,
  rawBody: Buffer | string,
  now: Date,
): void {
  const sentId = headerValues(headers, ID_HEADER)[0] ?? '';
  const sentTimestamp = headerValues(headers, TIMESTAMP_HEADER)[0] ?? '';
  const expected = Buffer.from(
    `v1,${hmacSha256(secretKey(config.secret), [`${sentId}.${sentTimestamp}.`, rawBody]).toString('base64')}`,
  );
  // Each checked to be the single value sent, so the ones the HMAC above covered.
  const signature = requireHeader(headers, SIGNATURE_HEADER, 'missing_signature');
  requireHeader(headers, ID_HEADER, 'missing_header');
  const timestamp = requireHeader(headers, TIMESTAMP_HEADER, 'missing_header');
  const signedAt = parseUnixSeconds(TIMESTAMP_HEADER, timestamp);
  assertFresh(TIMESTAMP_HEADER, signedAt, now, parseDurationMs(config.tolerance));
  assertFresh(TIMESTAMP_HEADER, signedAt, new Date(), LIBRARY_TOLERANCE_MS);
  // Every listed signature is compared, whichever matches (a sender rotating secrets lists several).
  let matched = false;
  for (const candidate of signature.split(' ')) {
    if (digestsEqual(expected, Buffer.from(candidate))) matched = true;
  }
  if (!matched)
    throw new WebhookVerificationError(
      'invalid_signature',
      `no signature in the ${SIGNATURE_HEADER} header matches the body`,
      SIGNATURE_HEADER,
    );
}

/**
 * Signs a delivery the way a Standard Webhooks sender does, using the
 * reference library. Returns the headers to send with the exact same body.
 *
 * @example
 * const body = JSON.stringify({ type: 'order.paid', timestamp: new Date().toISOString(), data: { order: 42 } });
 * await fetch('https://activity-core.example/v1/webhooks/shop', {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json', ...signStandardWebhook(secret, body, { id: 'msg_2Lh9...' }) },
 *   body,
 * });
 */
export function signStandardWebhook(
  secret: string,
  body: Buffer | string,
  options: { id: string; at?: Date },
): StandardWebhookHeaders {
  const at = options.at ?? new Date();
  return {
    'webhook-id': options.id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(options.id, at, body),
  };
}
