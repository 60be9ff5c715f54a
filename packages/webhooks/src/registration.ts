import type { EventTypeLocation, WebhookSourceConfig } from './source-config';

/** One reason a source config is refused at registration: the field and the rule. */
export interface RegistrationIssue {
  path: string;
  message: string;
}

/**
 * Shortest HMAC key accepted for `github` and `hmac_sha256` sources, in
 * characters (Unicode code points, as JSON Schema's minLength counts them);
 * as UTF-8 that is at least as many bytes.
 */
export const MIN_HMAC_SECRET_CHARACTERS = 16;
/** Shortest decoded Standard Webhooks secret accepted, in bytes (Standard Webhooks asks for 24 to 64). */
export const MIN_STANDARD_WEBHOOKS_SECRET_BYTES = 24;

/**
 * A Standard Webhooks secret as registration takes it: `whsec_` (optional),
 * then canonical base64 (padding optional) of at least
 * MIN_STANDARD_WEBHOOKS_SECRET_BYTES bytes — 32 characters or more.
 */
export const STANDARD_WEBHOOKS_SECRET_PATTERN =
  '^(?:whsec_)?(?:[A-Za-z0-9+/]{4}){8,}(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$';

function standardWebhooksSecretBytes(secret: string): number {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64').length;
}

function readsHeader(location: EventTypeLocation): boolean {
  return 'header' in location.from || (location.suffix !== undefined && 'header' in location.suffix);
}

/**
 * What a new or replaced source must satisfy beyond its schema. Checked when a
 * source is written (POST / PUT), not when a stored one is used, so sources
 * stored before a rule existed keep working (the server warns about them at
 * start-up, see `storedSourceWarnings`).
 *
 * - the secret is long enough to resist guessing;
 * - nothing unsigned decides the event type unless the operator said so
 *   (`event_type_from_unsigned_header`);
 * - a scheme that signs no timestamp is accepted only when the operator
 *   accepts that its deliveries verify forever (`allow_replay_without_timestamp`).
 */
export function registrationIssues(config: WebhookSourceConfig): RegistrationIssue[] {
  const issues: RegistrationIssue[] = [];
  if (config.scheme === 'standard_webhooks') {
    const bytes = standardWebhooksSecretBytes(config.secret);
    if (bytes < MIN_STANDARD_WEBHOOKS_SECRET_BYTES) {
      issues.push({
        path: 'secret',
        message: `a Standard Webhooks secret must decode to at least ${MIN_STANDARD_WEBHOOKS_SECRET_BYTES} bytes; this one has ${bytes}`,
      });
    } else if (!new RegExp(STANDARD_WEBHOOKS_SECRET_PATTERN).test(config.secret)) {
      issues.push({
        path: 'secret',
        message:
          'a Standard Webhooks secret is whsec_ followed by canonical base64 (A-Z a-z 0-9 + /, padding optional)',
      });
    }
  } else {
    const characters = [...config.secret].length;
    if (characters < MIN_HMAC_SECRET_CHARACTERS) {
      issues.push({
        path: 'secret',
        message: `the secret must be at least ${MIN_HMAC_SECRET_CHARACTERS} characters; this one has ${characters}`,
      });
    }
  }
  if (readsHeader(config.event_type) && !config.event_type_from_unsigned_header) {
    issues.push({
      path: 'event_type_from_unsigned_header',
      message:
        'event_type reads a header, which the signature does not cover, so a captured body could be re-sent as another event type; ' +
        'set event_type_from_unsigned_header: true to accept that, or read the event type from the body',
    });
  }
  const unstamped =
    config.scheme === 'github'
      ? 'GitHub signs no timestamp'
      : config.scheme === 'hmac_sha256' && config.timestamp_header === undefined
        ? 'without timestamp_header the signature covers no time'
        : undefined;
  if (unstamped !== undefined && !(config.scheme !== 'standard_webhooks' && config.allow_replay_without_timestamp)) {
    issues.push({
      path: 'allow_replay_without_timestamp',
      message:
        `${unstamped}, so a captured delivery verifies forever and only deduplication stops its replay; ` +
        `${config.scheme === 'hmac_sha256' ? 'set timestamp_header, or ' : ''}set allow_replay_without_timestamp: true to accept that`,
    });
  }
  return issues;
}

/**
 * Why a source as stored would not pass registration today (it was stored
 * before the rule existed). It keeps working; the server logs these at start-up.
 */
export function storedSourceWarnings(config: WebhookSourceConfig): string[] {
  return registrationIssues(config).map((issue) => `${issue.path}: ${issue.message}`);
}

/** The event type may come from a header only with the opt-in; `defaultReadsHeader`: the scheme's default event_type does. */
const eventTypeRule = (defaultReadsHeader: boolean) => ({
  description: 'An event_type that reads a header (unsigned) needs event_type_from_unsigned_header: true.',
  anyOf: [
    { properties: { event_type_from_unsigned_header: { const: true } }, required: ['event_type_from_unsigned_header'] },
    {
      properties: {
        event_type: {
          properties: { from: { not: { required: ['header'] } }, suffix: { not: { required: ['header'] } } },
        },
      },
      ...(defaultReadsHeader ? { required: ['event_type'] } : {}),
    },
  ],
});
const replayOptIn = {
  properties: { allow_replay_without_timestamp: { const: true } },
  required: ['allow_replay_without_timestamp'],
};
const hmacSecret = { properties: { secret: { minLength: MIN_HMAC_SECRET_CHARACTERS } } };

/**
 * registrationIssues() in JSON Schema, per scheme: `allOf` subschemas of the
 * request body that registers a source (the API's OpenAPI document states
 * them; stored sources are not held to them).
 */
export const REGISTRATION_SCHEMA_RULES: Record<WebhookSourceConfig['scheme'], object[]> = {
  standard_webhooks: [{ properties: { secret: { pattern: STANDARD_WEBHOOKS_SECRET_PATTERN } } }, eventTypeRule(false)],
  github: [
    hmacSecret,
    eventTypeRule(true),
    { description: 'GitHub signs no timestamp: allow_replay_without_timestamp must be true.', ...replayOptIn },
  ],
  hmac_sha256: [
    hmacSecret,
    eventTypeRule(false),
    {
      description:
        'Without timestamp_header the signature covers no time: set it, or allow_replay_without_timestamp: true.',
      anyOf: [{ required: ['timestamp_header'] }, replayOptIn],
    },
  ],
};
