import { parseDurationMs } from '@activity-core/contracts';
import { decodeHex, digestsEqual, hmacSha256 } from './digest';
import { WebhookVerificationError } from './errors';
import { headerValues, requireHeader, type WebhookHeaders } from './headers';
import type { HmacSha256SourceConfig } from './source-config';
import { assertFresh, parseUnixSeconds } from './timestamp';

/**
 * Verifies `{signature_header}: {signature_prefix}<hex>` against the
 * HMAC-SHA256 of the raw body, or of `{timestamp}.{body}` when a timestamp
 * header is configured (the timestamp exactly as sent). The HMAC is computed
 * before any header is checked (a missing timestamp signs as empty), so every
 * delivery costs the same work whatever its headers (see verifyDelivery).
 */
export function verifyHmac(
  config: HmacSha256SourceConfig,
  headers: WebhookHeaders,
  rawBody: Buffer | string,
  now: Date,
): void {
  const sentTimestamp =
    config.timestamp_header === undefined ? undefined : (headerValues(headers, config.timestamp_header)[0] ?? '');
  const expected = hmacSha256(config.secret, sentTimestamp === undefined ? [rawBody] : [`${sentTimestamp}.`, rawBody]);
  const header = requireHeader(headers, config.signature_header, 'missing_signature');
  if (config.timestamp_header !== undefined) {
    // Checked to be the single value sent, so it is the one the HMAC above covered.
    const timestamp = requireHeader(headers, config.timestamp_header, 'missing_header');
    assertFresh(
      config.timestamp_header,
      parseUnixSeconds(config.timestamp_header, timestamp),
      now,
      parseDurationMs(config.tolerance),
    );
  }
  const provided = header.startsWith(config.signature_prefix)
    ? decodeHex(header.slice(config.signature_prefix.length))
    : undefined;
  if (provided === undefined) {
    throw new WebhookVerificationError(
      'invalid_signature',
      `the ${config.signature_header} header must be ${config.signature_prefix === '' ? '' : `${config.signature_prefix} followed by `}a hex digest`,
      config.signature_header,
    );
  }
  if (!digestsEqual(expected, provided)) {
    throw new WebhookVerificationError(
      'invalid_signature',
      `the ${config.signature_header} signature does not match the body`,
      config.signature_header,
    );
  }
}

/**
 * Signs a body for an `hmac_sha256` source. Returns the headers to send with
 * the exact same body: the signature, and the timestamp when the source uses one.
 *
 * @param at the send time signed with the body when `timestamp_header` is set. @default now
 *
 * @example
 * const body = JSON.stringify({ id: 'evt_123', type: 'invoice.paid', amount: 100 });
 * await fetch('https://activity-core.example/v1/webhooks/billing', {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json', ...signHmac(source, body) },
 *   body,
 * });
 */
export function signHmac(
  config: Pick<HmacSha256SourceConfig, 'secret' | 'signature_header' | 'signature_prefix' | 'timestamp_header'>,
  body: Buffer | string,
  at: Date = new Date(),
): Record<string, string> {
  if (config.timestamp_header === undefined) {
    return {
      [config.signature_header]: `${config.signature_prefix}${hmacSha256(config.secret, [body]).toString('hex')}`,
    };
  }
  const timestamp = String(Math.floor(at.getTime() / 1000));
  return {
    [config.timestamp_header]: timestamp,
    [config.signature_header]: `${config.signature_prefix}${hmacSha256(config.secret, [`${timestamp}.`, body]).toString('hex')}`,
  };
}
