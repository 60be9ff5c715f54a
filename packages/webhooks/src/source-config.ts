import { Duration, durationPattern, tryParseDurationMs } from '@activity-core/contracts';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';

/**
 * Terminology
 * - source: one configured webhook sender, addressed as `POST /v1/webhooks/{name}`.
 * - scheme: how the sender signs: Standard Webhooks, GitHub, or a plain HMAC-SHA256.
 * - location: where a value is read from a delivery: a header, or a dot path
 *   into the JSON body.
 * - delivery: one HTTP request; redeliveries of the same event share its event id.
 */

/** An HTTP header name (RFC 9110 token). Matched case-insensitively. */
const HeaderName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name');

/** Text the store keeps: no NUL character (Postgres text and jsonb cannot hold U+0000). */
// eslint-disable-next-line no-control-regex -- the one control character refused, on purpose
const NO_NUL = /^[^\u0000]*$/;
const NO_NUL_MESSAGE = 'must not contain the NUL character (\\u0000)';

/** Dot-separated keys into the JSON body, e.g. `data.object.id`; numeric keys index arrays. */
const BodyPath = z
  .string()
  .min(1)
  .max(200)
  // eslint-disable-next-line no-control-regex -- NUL refused, see NO_NUL
  .regex(/^[^.\u0000]+(?:\.[^.\u0000]+)*$/, 'must be dot-separated keys (no NUL character), e.g. data.object.id');

/** A secret shared with the sender, kept as text. */
const SharedSecret = z.string().min(1).max(500).regex(NO_NUL, NO_NUL_MESSAGE);

/** Where a value is read from: `{ "header": "X-GitHub-Delivery" }` or `{ "body": "data.id" }`. */
export const FieldLocation = z.union([
  z.object({ header: HeaderName }).strict(),
  z.object({ body: BodyPath }).strict(),
]);
export type FieldLocation = z.infer<typeof FieldLocation>;

/**
 * Where the event type is read from. With `suffix`, a value found there is
 * appended after a dot: GitHub's `pull_request` event with `action: "opened"`
 * becomes `pull_request.opened`, so triggers can match `pull_request.*`.
 */
export const EventTypeLocation = z
  .object({
    from: FieldLocation,
    suffix: FieldLocation.optional(),
  })
  .strict();
export type EventTypeLocation = z.infer<typeof EventTypeLocation>;

/** A slug: it is the `{source}` segment of the webhook URL. */
export const WebhookSourceName = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^[a-z0-9][a-z0-9_-]*$/,
    'name may contain lowercase letters, digits, _ and - and must start with a letter or digit',
  );

/** A value that is not a duration at all is reported by Duration's pattern; the range checks pass it by. */
const ToleranceDuration = Duration.refine(
  (value) => (tryParseDurationMs(value) ?? Infinity) >= 1_000,
  'tolerance must be at least 1s',
).meta({
  pattern: durationPattern({ min: '1s' }),
});

/** The Standard Webhooks library checks the timestamp against the system clock with a fixed 5 minutes. */
const LIBRARY_TOLERANCE_MS = 5 * 60_000;

function isStandardWebhooksSecret(secret: string): boolean {
  try {
    new Webhook(secret);
    return true;
  } catch {
    return false;
  }
}

const common = {
  name: WebhookSourceName,
  /**
   * Lets `event_type` read a header. Headers are not signed (Standard Webhooks
   * signs only its id and timestamp), so a captured body could be re-sent
   * under another event type; deliveries of the same signed bytes are still
   * answered `duplicate`, which blunts that. Registration refuses a header
   * in `event_type` unless this is true.
   * @default false
   */
  event_type_from_unsigned_header: z.boolean().default(false),
  /**
   * Stamped as the envelope's `source`; activities can match on it.
   * @default `webhook:{name}` (resolved at extraction, so it follows renames)
   */
  event_source: z.string().min(1).max(500).regex(NO_NUL, NO_NUL_MESSAGE).optional(),
};

/** [Standard Webhooks](https://www.standardwebhooks.com/) (Svix and others): `webhook-id`, `webhook-timestamp`, `webhook-signature`. */
export const StandardWebhooksSourceConfig = z
  .object({
    scheme: z.literal('standard_webhooks'),
    ...common,
    /** The signing secret as the sender shows it: `whsec_` followed by base64. */
    secret: z
      .string()
      .min(1)
      .max(500)
      .refine(isStandardWebhooksSecret, 'secret must be a Standard Webhooks secret: whsec_ followed by base64'),
    /**
     * How far `webhook-timestamp` may be from the receive time.
     * @default '5m' — the Standard Webhooks recommendation. At most 5m: the
     * reference library also enforces a fixed 5 minutes against the system clock,
     * so a longer tolerance would be silently ignored.
     */
    tolerance: ToleranceDuration.refine(
      (value) => (tryParseDurationMs(value) ?? 0) <= LIBRARY_TOLERANCE_MS,
      'tolerance must be at most 5m for standard_webhooks (the reference library enforces 5 minutes)',
    )
      .meta({ pattern: durationPattern({ min: '1s', max: '5m' }) })
      .default('5m'),
    /**
     * Where the event id is read from; the first location with a value wins.
     * @default [{ header: 'webhook-id' }] — the Standard Webhooks idempotency key, stable across retries.
     */
    event_id: z
      .array(FieldLocation)
      .max(5)
      .default(() => [{ header: 'webhook-id' }]),
    /**
     * Where the event type is read from.
     * @default { from: { body: 'type' } } — the payload shape Standard Webhooks recommends.
     */
    event_type: EventTypeLocation.default(() => ({ from: { body: 'type' } })),
  })
  .strict();
export type StandardWebhooksSourceConfig = z.infer<typeof StandardWebhooksSourceConfig>;

/** GitHub webhooks: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`. GitHub signs no timestamp. */
export const GithubSourceConfig = z
  .object({
    scheme: z.literal('github'),
    ...common,
    /** The webhook secret entered in GitHub's webhook settings. At least 16 bytes at registration. */
    secret: SharedSecret,
    /**
     * GitHub signs no timestamp, so a captured delivery verifies forever; only
     * deduplication (by delivery id and by the SHA-256 of the signed body)
     * stops its replay, and only for as long as events are retained.
     * Registration refuses a GitHub source unless this is true.
     * @default false
     */
    allow_replay_without_timestamp: z.boolean().default(false),
    /**
     * @default [{ header: 'X-GitHub-Delivery' }] — GitHub keeps it on redelivery.
     * Bodies carry resource ids (issue, repository), never an event id, so the body is not consulted.
     */
    event_id: z
      .array(FieldLocation)
      .max(5)
      .default(() => [{ header: 'X-GitHub-Delivery' }]),
    /**
     * @default { from: { header: 'X-GitHub-Event' }, suffix: { body: 'action' } } —
     * `pull_request.opened`; events without an action stay as they are (`push`).
     * GitHub's payload does not name the event (only `action`, shared by many
     * events), so the default reads the unsigned X-GitHub-Event header and
     * therefore needs `event_type_from_unsigned_header: true` at registration.
     */
    event_type: EventTypeLocation.default(() => ({ from: { header: 'X-GitHub-Event' }, suffix: { body: 'action' } })),
  })
  .strict();
export type GithubSourceConfig = z.infer<typeof GithubSourceConfig>;

/**
 * A plain HMAC-SHA256 of the raw body (or of `{timestamp}.{body}` when
 * `timestamp_header` is set), hex-encoded in one header.
 */
export const HmacSha256SourceConfig = z
  .object({
    scheme: z.literal('hmac_sha256'),
    ...common,
    /** The shared secret, used as the HMAC key as UTF-8 bytes. At least 16 bytes at registration. */
    secret: SharedSecret,
    /** @default 'X-Signature' */
    signature_header: HeaderName.default('X-Signature'),
    /**
     * Text before the hex digest in the signature header, e.g. `sha256=`; required when set.
     * @default '' (bare hex)
     */
    signature_prefix: z
      .string()
      .max(32)
      .regex(/^[\x21-\x7e]*$/, 'signature_prefix must be printable ASCII without spaces')
      .default(''),
    /**
     * A header carrying the send time in Unix seconds. When set, the signed
     * content is `{timestamp}.{body}` and the timestamp must be within `tolerance`,
     * which defeats replays. Unset: the body alone is signed and replays are
     * only stopped by event-id deduplication.
     */
    timestamp_header: HeaderName.optional(),
    /** Used only with `timestamp_header`. @default '5m' */
    tolerance: ToleranceDuration.default('5m'),
    /**
     * Without `timestamp_header` a captured delivery verifies forever; only
     * deduplication (by event id and by the SHA-256 of the signed body) stops
     * its replay, and only for as long as events are retained. Registration
     * refuses a source without `timestamp_header` unless this is true.
     * @default false
     */
    allow_replay_without_timestamp: z.boolean().default(false),
    /**
     * @default [{ body: 'id' }, { header: 'Idempotency-Key' }] — the product's id
     * precedence: the body's own id, else the sender's idempotency key.
     */
    event_id: z
      .array(FieldLocation)
      .max(5)
      .default(() => [{ body: 'id' }, { header: 'Idempotency-Key' }]),
    /** @default { from: { body: 'type' } } */
    event_type: EventTypeLocation.default(() => ({ from: { body: 'type' } })),
  })
  .strict();
export type HmacSha256SourceConfig = z.infer<typeof HmacSha256SourceConfig>;

/**
 * One webhook source: how its deliveries are verified and how an event is read
 * from them. Parse stored or submitted configs with this schema to get the
 * per-scheme defaults.
 */
export const WebhookSourceConfig = z.discriminatedUnion('scheme', [
  StandardWebhooksSourceConfig,
  GithubSourceConfig,
  HmacSha256SourceConfig,
]);
export type WebhookSourceConfig = z.infer<typeof WebhookSourceConfig>;
