/**
 * Why a delivery was refused before its content was looked at. Every code
 * means "not proven to come from the sender"; the HTTP boundary answers 401.
 *
 * - `missing_signature`: the scheme's signature header is absent or empty.
 * - `invalid_signature`: the signature is malformed or does not match the body.
 * - `missing_header`: another header the scheme signs (id, timestamp) is absent.
 * - `invalid_header`: a header is present but unusable (a timestamp that is not
 *   whole Unix seconds, a header repeated with different values).
 * - `stale_timestamp`: the signed timestamp is outside the tolerance, in the
 *   past (a possible replay) or in the future.
 */
export type WebhookVerificationErrorCode =
  'missing_signature' | 'invalid_signature' | 'missing_header' | 'invalid_header' | 'stale_timestamp';

/**
 * A delivery failed signature verification. The message is safe to return to
 * the caller: it names headers and rules, never the secret or the expected
 * signature.
 */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';

  constructor(
    readonly code: WebhookVerificationErrorCode,
    message: string,
    /** The header the problem is about, as configured (for field-level error details). */
    readonly header?: string,
  ) {
    super(message);
  }
}

/**
 * Why a verified delivery could not be turned into an event. The HTTP
 * boundary answers 400: the sender is authentic, the content is wrong.
 *
 * - `invalid_json`: the body is not JSON.
 * - `not_an_object`: the body is JSON but not an object (it becomes `data`).
 * - `missing_event_type`: nothing at the configured event type location.
 * - `invalid_event_type`: the event type found is not a string or not a valid event type.
 * - `invalid_event_id`: an event id was found but is not a valid event id.
 */
export type WebhookPayloadErrorCode =
  'invalid_json' | 'not_an_object' | 'missing_event_type' | 'invalid_event_type' | 'invalid_event_id';

/** A verified delivery's content cannot become an event envelope. Message is safe to return. */
export class WebhookPayloadError extends Error {
  override readonly name = 'WebhookPayloadError';

  constructor(
    readonly code: WebhookPayloadErrorCode,
    message: string,
  ) {
    super(message);
  }
}
