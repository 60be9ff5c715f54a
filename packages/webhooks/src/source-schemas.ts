import { z } from 'zod';
import { REGISTRATION_SCHEMA_RULES } from './registration';
import {
  GithubSourceConfig,
  HmacSha256SourceConfig,
  StandardWebhooksSourceConfig,
  WebhookSourceName,
} from './source-config';

/**
 * The webhook-source schemas of the HTTP API, declared once: the API's routes
 * validate and document with them, and the typed client types its requests
 * and results with the very same objects.
 */

const shown = {
  secret_hint: z.string().nullable().meta({
    description:
      'The last four characters of the secret (null for secrets under 16 characters); the secret itself is never returned.',
  }),
  secret_encrypted: z.boolean().meta({ description: 'Whether the secret is stored encrypted (WEBHOOK_SECRET_KEYS).' }),
  created_at: z.string(),
  updated_at: z.string(),
};

/** A source as responses show it: the config without its secret. */
export const WebhookSourceRecord = z
  .discriminatedUnion('scheme', [
    StandardWebhooksSourceConfig.omit({ secret: true }).extend(shown),
    GithubSourceConfig.omit({ secret: true }).extend(shown),
    HmacSha256SourceConfig.omit({ secret: true }).extend(shown),
  ])
  .meta({ id: 'WebhookSource' });
export type WebhookSourceRecord = z.output<typeof WebhookSourceRecord>;

export const WebhookSourceList = z.object({ items: z.array(WebhookSourceRecord) });

/** A source config as a write takes it: the registration rules (registrationIssues) stated in its schema. */
const registering = <T extends z.ZodObject>(config: T, scheme: keyof typeof REGISTRATION_SCHEMA_RULES): T =>
  config.meta({ allOf: REGISTRATION_SCHEMA_RULES[scheme] });

/** `POST /v1/webhook-sources`. */
export const WebhookSourceBody = z.discriminatedUnion('scheme', [
  registering(StandardWebhooksSourceConfig, 'standard_webhooks'),
  registering(GithubSourceConfig, 'github'),
  registering(HmacSha256SourceConfig, 'hmac_sha256'),
]);

/** PUT takes the name from the path; a name in the body must agree (a rule across body and path, which a schema cannot state). */
const optionalName = {
  name: WebhookSourceName.optional().meta({
    description:
      'When given, the name in the path: a different name is refused (400 naming `name`); a schema cannot state it.',
  }),
};
/** `PUT /v1/webhook-sources/{name}`. */
export const WebhookSourcePutBody = z.discriminatedUnion('scheme', [
  registering(StandardWebhooksSourceConfig.extend(optionalName), 'standard_webhooks'),
  registering(GithubSourceConfig.extend(optionalName), 'github'),
  registering(HmacSha256SourceConfig.extend(optionalName), 'hmac_sha256'),
]);
export type WebhookSourceInput = z.input<typeof WebhookSourcePutBody>;
