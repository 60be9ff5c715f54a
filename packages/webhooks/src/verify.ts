import { createHash, randomBytes } from 'node:crypto';
import { WebhookVerificationError } from './errors';
import { hmacSha256 } from './digest';
import { verifyGithub } from './github';
import { headerValues, type WebhookHeaders } from './headers';
import { verifyHmac } from './hmac';
import type { WebhookSourceConfig } from './source-config';
import { verifyStandardWebhook } from './standard-webhooks';

/**
 * Proves a delivery came from the source's sender, or throws
 * `WebhookVerificationError` (answer 401). Call it before
 * `extractEvent`, on the raw body exactly as received: re-serialised JSON
 * does not verify.
 *
 * @param headers request headers; names are matched case-insensitively.
 * @param rawBody the request body bytes (a string is taken as UTF-8).
 * @param now the receive time that signed timestamps are checked against.
 * @throws {WebhookVerificationError} with a `code` saying why; the message is safe to return.
 */
export function verifyWebhook(
  config: WebhookSourceConfig,
  headers: WebhookHeaders,
  rawBody: Buffer | string,
  now: Date,
): VerifiedDelivery {
  switch (config.scheme) {
    case 'standard_webhooks':
      verifyStandardWebhook(config, headers, rawBody, now);
      // Verified, so each of these headers is present exactly once.
      return verified([
        headerValues(headers, 'webhook-id')[0] ?? '',
        '.',
        headerValues(headers, 'webhook-timestamp')[0] ?? '',
        '.',
        rawBody,
      ]);
    case 'github':
      verifyGithub(config, headers, rawBody);
      return verified([rawBody]);
    case 'hmac_sha256':
      verifyHmac(config, headers, rawBody, now);
      return verified(
        config.timestamp_header === undefined
          ? [rawBody]
          : [headerValues(headers, config.timestamp_header)[0] ?? '', '.', rawBody],
      );
    default: {
      const unknown: never = config;
      throw new Error(`unknown webhook scheme: ${(unknown as { scheme: string }).scheme}`);
    }
  }
}

/** What verification proved about a delivery. */
export interface VerifiedDelivery {
  /**
   * SHA-256 (hex) of exactly the bytes the signature covers: the body, or
   * `{timestamp}.{body}`, or `{id}.{timestamp}.{body}` for Standard Webhooks.
   * Two deliveries with the same value are the same signed message, whatever
   * their unsigned headers say — a replay, or a retry of the same attempt.
   */
  signedSha256: string;
}

function verified(parts: readonly (Buffer | string)[]): VerifiedDelivery {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return { signedSha256: hash.digest('hex') };
}

/** A key no sender knows, fixed for the life of the process. */
const DUMMY_KEY = randomBytes(32);

/**
 * Refuses a delivery to a source that does not exist (or whose secret cannot
 * be opened), exactly as a bad signature on one that does: the same error (so
 * the same answer), after the same work — one HMAC over the whole body, with
 * a key no one has, and no header looked at — so the answer neither says nor
 * times which source names exist.
 *
 * @throws {WebhookVerificationError} always
 */
export function refuseUnknownSource(rawBody: Buffer | string): never {
  hmacSha256(DUMMY_KEY, [rawBody]);
  throw unverifiedDelivery();
}

/**
 * Verifies a delivery to a source that may not exist (`config` undefined).
 * Every delivery costs exactly one HMAC over its whole body, computed before
 * any header is checked: for a known source the scheme's own (each scheme
 * signs first and reads headers after), for an unknown one a dummy. So how
 * long the answer takes does not depend on whether the source exists, nor on
 * which headers were sent.
 *
 * @throws {WebhookVerificationError} unknown source (always the one refusal), or why the delivery does not verify
 */
export function verifyDelivery(
  config: WebhookSourceConfig | undefined,
  headers: WebhookHeaders,
  rawBody: Buffer | string,
  now: Date,
): VerifiedDelivery {
  if (config === undefined) return refuseUnknownSource(rawBody);
  return verifyWebhook(config, headers, rawBody, now);
}

/**
 * The one refusal every unverified delivery gets, whatever the reason (no
 * such source, missing or stale header, wrong signature): the answer must not
 * tell a prober which sources exist or how each is configured. The specific
 * reason is for the server's log only.
 */
export function unverifiedDelivery(): WebhookVerificationError {
  return new WebhookVerificationError(
    'invalid_signature',
    "the delivery could not be verified: the source's signature headers are missing, malformed, stale or do not match",
  );
}
