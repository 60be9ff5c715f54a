import { z } from 'zod';
import { Rfc3339DateTime } from './date-time';

/**
 * Terminology
 * - envelope: the normalised form of every inbound event, whatever its wire shape.
 * - event id: the durable identity of an event; deliveries with the same id are
 *   the same event. Taken from the body, else the Idempotency-Key header, else
 *   the provider's delivery id, else assigned at the boundary.
 * - fingerprint: SHA-256 of the canonical JSON of the event's content; same id
 *   with a different fingerprint means the id was reused for another event.
 */

/** Printable, no whitespace: event ids end up inside workflow ids. */
export const EventId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'event_id must be printable ASCII without spaces');
export type EventId = z.infer<typeof EventId>;

export const EventType = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/, 'event_type may contain letters, digits and _ . : / -');
export type EventType = z.infer<typeof EventType>;

const eventFields = {
  event_type: EventType,
  source: z.string().min(1).max(500),
  occurred_at: Rfc3339DateTime,
  subject: z.string().min(1).max(500).optional(),
  data: z.record(z.string(), z.unknown()).default({}),
};

/** An event as the system stores and routes it. */
export const EventEnvelope = z
  .object({ event_id: EventId, ...eventFields })
  .strict()
  .meta({
    id: 'EventEnvelope',
    title: 'Event envelope',
    description: 'The normalised form of every event activity-core accepts.',
  });
export type EventEnvelope = z.infer<typeof EventEnvelope>;

/** An envelope as a sender may post it: the id may come from a header instead. */
export const EventEnvelopeInput = z.object({ event_id: EventId.optional(), ...eventFields }).strict();
export type EventEnvelopeInput = z.infer<typeof EventEnvelopeInput>;

/**
 * True for a JSON media type: `application/json` or any `+json` structured
 * syntax suffix (`application/vnd.acme.order+json`), parameters allowed.
 * Event data is JSON: this is what `datacontenttype`, and in CloudEvents
 * binary mode the request's Content-Type, may say.
 */
export function isJsonMediaType(mediaType: string): boolean {
  const essence = (mediaType.split(';', 1)[0] ?? '').trim().toLowerCase();
  return /^application\/(?:[a-z0-9!#$&^_.-]+\+)?json$/.test(essence);
}

/** isJsonMediaType as a pattern (for the JSON Schema): ASCII whitespace around the essence, letters in any case. */
export const JSON_MEDIA_TYPE_PATTERN =
  '^[ \\t\\n\\r]*[Aa][Pp][Pp][Ll][Ii][Cc][Aa][Tt][Ii][Oo][Nn]/(?:[A-Za-z0-9!#$&^_.-]+\\+)?[Jj][Ss][Oo][Nn][ \\t\\n\\r]*(?:;[\\s\\S]*)?$';

/** CloudEvents 1.0 in JSON (structured or batched mode, or built from binary-mode headers), mapped onto the envelope. */
export const CloudEvent = z
  .object({
    specversion: z.literal('1.0'),
    id: EventId,
    type: EventType,
    source: z.string().min(1).max(500),
    time: Rfc3339DateTime.optional(),
    subject: z.string().min(1).max(500).optional(),
    datacontenttype: z
      .string()
      .max(200)
      .refine(
        isJsonMediaType,
        'event data must be JSON: datacontenttype must be application/json or a +json media type',
      )
      .optional()
      .meta({
        description:
          'When present, a JSON media type (`application/json` or `…+json`): event data is a JSON object. Checked, not kept.',
        pattern: JSON_MEDIA_TYPE_PATTERN,
      }),
    dataschema: z.string().max(2000).optional(),
    data: z.record(z.string(), z.unknown()).optional(),
    data_base64: z
      .never({ error: 'binary event data (data_base64) is not accepted: event data must be a JSON object in `data`' })
      .optional()
      .meta({ description: 'Not accepted: event data must be a JSON object in `data`.' }),
  })
  .catchall(z.unknown())
  .meta({
    id: 'CloudEvent',
    description:
      'CloudEvents 1.0 JSON (structured and batched mode); mapped onto the event envelope. Extension attributes are accepted and not kept.',
  });
export type CloudEvent = z.infer<typeof CloudEvent>;

export function isCloudEvent(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'specversion' in body;
}

/**
 * Maps a CloudEvent onto the envelope. A CloudEvent without `time` gets the
 * receive time (CloudEvents makes `time` optional; the envelope does not).
 */
export function envelopeFromCloudEvent(event: CloudEvent, receivedAt: Date): EventEnvelopeInput {
  return {
    event_id: event.id,
    event_type: event.type,
    source: event.source,
    occurred_at: event.time ?? receivedAt.toISOString(),
    ...(event.subject === undefined ? {} : { subject: event.subject }),
    data: event.data ?? {},
  };
}

/**
 * The key in an `Idempotency-Key` header. The IETF draft
 * (draft-ietf-httpapi-idempotency-key-header) makes it a Structured Field
 * string, sent quoted: `Idempotency-Key: "8e03978e-40d5"`. Many senders send
 * the bare token instead; both give the same key. A quoted value is unescaped
 * (`\"` and `\\`); anything else is taken as it is and validated as an event id.
 */
export function parseIdempotencyKey(header: string): string {
  const value = header.trim();
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(value);
  return quoted === null ? value : (quoted[1] ?? '').replace(/\\(["\\])/g, '$1');
}

/**
 * Where an event's id came from; recorded with the event so "why this id" has an answer.
 * `system`: a system event the service emitted itself (e.g. `activity_core.run.failed`, id `run-failed:{run_id}`).
 */
export const EventIdOrigin = z.enum(['body', 'idempotency_key', 'delivery_id', 'assigned', 'emitted', 'system']);
export type EventIdOrigin = z.infer<typeof EventIdOrigin>;
