import { parseDurationMs } from '@activity-core/contracts';
import { Webhook, WebhookVerificationError as LibraryVerificationError } from 'standardwebhooks';
import { WebhookVerificationError } from './errors';
import { requireHeader, type WebhookHeaders } from './headers';
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

/**
 * Verifies with the reference library's `Webhook.verify`. The headers and the
 * timestamp are checked here first, against `now` and the configured
 * tolerance, so the common failures get precise codes; the library then checks
 * the signature and, with its fixed 5 minutes, the timestamp against the system clock.
 */
export function verifyStandardWebhook(
  config: StandardWebhooksSourceConfig,
  headers: WebhookHeaders,
  rawBody: Buffer | string,
  now: Date,
): void {
  const signature = requireHeader(headers, SIGNATURE_HEADER, 'missing_signature');
  const id = requireHeader(headers, ID_HEADER, 'missing_header');
  const timestamp = requireHeader(headers, TIMESTAMP_HEADER, 'missing_header');
  assertFresh(TIMESTAMP_HEADER, parseUnixSeconds(TIMESTAMP_HEADER, timestamp), now, parseDurationMs(config.tolerance));
  try {
    new Webhook(config.secret).verify(
      rawBody,
      { [ID_HEADER]: id, [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: signature },
      // The body is parsed (and its errors reported) by extraction, not here.
      { jsonParse: false },
    );
  } catch (error) {
    if (error instanceof LibraryVerificationError) throw fromLibraryError(error);
    throw error;
  }
}

/** The library has one error class; its messages are the only way to tell failures apart. */
function fromLibraryError(error: LibraryVerificationError): WebhookVerificationError {
  if (/timestamp too (old|new)/i.test(error.message)) {
    return new WebhookVerificationError('stale_timestamp', `the ${TIMESTAMP_HEADER} timestamp is outside the allowed tolerance`, TIMESTAMP_HEADER);
  }
  if (/missing required headers/i.test(error.message)) {
    return new WebhookVerificationError('missing_header', 'a required Standard Webhooks header is missing');
  }
  if (/invalid signature headers/i.test(error.message)) {
    return new WebhookVerificationError('invalid_header', `the ${TIMESTAMP_HEADER} header must be whole Unix seconds`, TIMESTAMP_HEADER);
  }
  return new WebhookVerificationError('invalid_signature', `no signature in the ${SIGNATURE_HEADER} header matches the body`, SIGNATURE_HEADER);
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
