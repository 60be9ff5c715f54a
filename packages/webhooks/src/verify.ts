import { verifyGithub } from './github';
import type { WebhookHeaders } from './headers';
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
export function verifyWebhook(config: WebhookSourceConfig, headers: WebhookHeaders, rawBody: Buffer | string, now: Date): void {
  switch (config.scheme) {
    case 'standard_webhooks':
      return verifyStandardWebhook(config, headers, rawBody, now);
    case 'github':
      return verifyGithub(config, headers, rawBody);
    case 'hmac_sha256':
      return verifyHmac(config, headers, rawBody, now);
    default: {
      const unknown: never = config;
      throw new Error(`unknown webhook scheme: ${(unknown as { scheme: string }).scheme}`);
    }
  }
}
