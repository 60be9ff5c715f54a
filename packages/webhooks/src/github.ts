import { decodeHex, digestsEqual, hmacSha256 } from './digest';
import { WebhookVerificationError } from './errors';
import { requireHeader, type WebhookHeaders } from './headers';
import type { GithubSourceConfig } from './source-config';

const SIGNATURE_HEADER = 'X-Hub-Signature-256';
const PREFIX = 'sha256=';

/**
 * Verifies `X-Hub-Signature-256: sha256=<hex>` against the HMAC-SHA256 of the
 * raw body. The legacy SHA-1 `X-Hub-Signature` is not accepted. The HMAC is
 * computed before any header is looked at, so every delivery costs the same
 * work whatever its headers (see verifyDelivery).
 */
export function verifyGithub(config: GithubSourceConfig, headers: WebhookHeaders, rawBody: Buffer | string): void {
  const expected = hmacSha256(config.secret, [rawBody]);
  const header = requireHeader(headers, SIGNATURE_HEADER, 'missing_signature');
  const provided = header.startsWith(PREFIX) ? decodeHex(header.slice(PREFIX.length)) : undefined;
  if (provided === undefined) {
    throw new WebhookVerificationError(
      'invalid_signature',
      `the ${SIGNATURE_HEADER} header must be sha256= followed by a hex digest`,
      SIGNATURE_HEADER,
    );
  }
  if (!digestsEqual(expected, provided)) {
    throw new WebhookVerificationError(
      'invalid_signature',
      `the ${SIGNATURE_HEADER} signature does not match the body`,
      SIGNATURE_HEADER,
    );
  }
}

/**
 * Signs a body the way GitHub does. Returns the header to send with the exact same body.
 *
 * @example
 * const body = JSON.stringify({ action: 'opened', pull_request: { number: 1 } });
 * await fetch('https://activity-core.example/v1/webhooks/github', {
 *   method: 'POST',
 *   headers: {
 *     'content-type': 'application/json',
 *     'X-GitHub-Event': 'pull_request',
 *     'X-GitHub-Delivery': crypto.randomUUID(),
 *     ...signGithub(secret, body),
 *   },
 *   body,
 * });
 */
export function signGithub(secret: string, body: Buffer | string): { 'X-Hub-Signature-256': string } {
  return { 'X-Hub-Signature-256': `${PREFIX}${hmacSha256(secret, [body]).toString('hex')}` };
}
