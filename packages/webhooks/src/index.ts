/**
 * Webhook ingress, framework-free: verify a delivery's signature, then read
 * the event out of it. The HTTP route does, per request to
 * `POST /v1/webhooks/{source}`:
 *
 * ```ts
 * const config = WebhookSourceConfig.parse(stored);        // defaults per scheme
 * verifyWebhook(config, request.headers, rawBody, now);    // WebhookVerificationError → 401
 * const { envelope, idOrigin } = extractEvent(config, request.headers, rawBody, now); // WebhookPayloadError → 400
 * ```
 *
 * The `sign*` helpers produce valid deliveries, for tests and for senders.
 */
export {
  EventTypeLocation,
  FieldLocation,
  GithubSourceConfig,
  HmacSha256SourceConfig,
  StandardWebhooksSourceConfig,
  WebhookSourceConfig,
  WebhookSourceName,
} from './source-config';
export {
  refuseUnknownSource,
  unverifiedDelivery,
  verifyDelivery,
  verifyWebhook,
  type VerifiedDelivery,
} from './verify';
export {
  MIN_HMAC_SECRET_CHARACTERS,
  MIN_STANDARD_WEBHOOKS_SECRET_BYTES,
  REGISTRATION_SCHEMA_RULES,
  registrationIssues,
  STANDARD_WEBHOOKS_SECRET_PATTERN,
  storedSourceWarnings,
  type RegistrationIssue,
} from './registration';
export { extractEvent, type ExtractedEvent } from './extract';
export {
  WebhookSourceBody,
  type WebhookSourceInput,
  WebhookSourceList,
  WebhookSourcePutBody,
  WebhookSourceRecord,
} from './source-schemas';
export {
  WebhookPayloadError,
  WebhookVerificationError,
  type WebhookPayloadErrorCode,
  type WebhookVerificationErrorCode,
} from './errors';
export type { WebhookHeaders } from './headers';
export { signStandardWebhook, type StandardWebhookHeaders } from './standard-webhooks';
export { signGithub } from './github';
export { signHmac } from './hmac';
export { createSecretBox, isSealedSecret, SecretBoxError, type SealedSecret, type SecretBox } from './secret-box';
