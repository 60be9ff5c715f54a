import {
  EventId,
  EventType,
  parseIdempotencyKey,
  webhookEventId,
  type EventEnvelopeInput,
  type EventIdOrigin,
} from '@activity-core/contracts';
import { z } from 'zod';
import { WebhookPayloadError } from './errors';
import { headerValues, type WebhookHeaders } from './headers';
import type { EventTypeLocation, FieldLocation, WebhookSourceConfig } from './source-config';
import { tryParseUnixSeconds } from './timestamp';

/** A verified delivery as an event, ready for ingestion. */
export interface ExtractedEvent {
  /** `event_id` is absent when no configured location had one; the caller assigns it. */
  envelope: EventEnvelopeInput;
  /** Where `envelope.event_id` came from; `assigned` means it is absent and must be assigned. */
  idOrigin: EventIdOrigin;
}

type JsonObject = Record<string, unknown>;

const Rfc3339 = z.iso.datetime({ offset: true });

/**
 * Reads the event out of a delivery that `verifyWebhook` accepted: the JSON
 * body becomes `data`, the id and type come from the source's configured
 * locations, `source` is `event_source` (default `webhook:{name}`). The event
 * id is the delivery id namespaced by source: `wh:{name}:{delivery id}`.
 *
 * `occurred_at` is the sender's own time where the scheme has one: the
 * Standard Webhooks body `timestamp` (else `webhook-timestamp`), the hmac
 * `timestamp_header`; otherwise `receivedAt`. Note that the last two differ
 * between redeliveries of one event.
 *
 * @throws {WebhookPayloadError} when the body is not a JSON object, the event
 * type is missing or invalid, or an event id was found but is invalid (answer 400).
 */
export function extractEvent(
  config: WebhookSourceConfig,
  headers: WebhookHeaders,
  rawBody: Buffer | string,
  receivedAt: Date,
): ExtractedEvent {
  const data = parseBody(rawBody);
  const eventType = readEventType(config.event_type, headers, data);
  const id = readEventId(config.event_id, headers, data);
  return {
    envelope: {
      // Namespaced per source (`wh:{source}:{id}`): no other source and no POST /v1/events can hold this id first.
      ...(id === undefined ? {} : { event_id: webhookEventId(config.name, id.value) }),
      event_type: eventType,
      source: config.event_source ?? `webhook:${config.name}`,
      occurred_at: occurredAt(config, headers, data) ?? receivedAt.toISOString(),
      data,
    },
    idOrigin: id?.origin ?? 'assigned',
  };
}

function parseBody(rawBody: Buffer | string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'));
  } catch (error) {
    throw new WebhookPayloadError('invalid_json', `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(parsed)) throw new WebhookPayloadError('not_an_object', 'the body must be a JSON object');
  return parsed;
}

function readEventType(location: EventTypeLocation, headers: WebhookHeaders, body: JsonObject): string {
  const base = readLocation(location.from, headers, body);
  if (base === undefined) {
    throw new WebhookPayloadError(
      'missing_event_type',
      `no event type: expected a string at ${describe(location.from)}`,
    );
  }
  if (typeof base !== 'string')
    throw new WebhookPayloadError('invalid_event_type', `${describe(location.from)} must be a single string`);

  let eventType = base;
  if (location.suffix !== undefined) {
    const suffix = readLocation(location.suffix, headers, body);
    if (suffix !== undefined && typeof suffix !== 'string') {
      throw new WebhookPayloadError('invalid_event_type', `${describe(location.suffix)} must be a single string`);
    }
    if (suffix !== undefined && suffix !== '') eventType = `${base}.${suffix}`;
  }
  if (!EventType.safeParse(eventType).success) {
    throw new WebhookPayloadError(
      'invalid_event_type',
      `the event type read from ${describe(location.from)} must be at most 200 letters, digits and _ . : / -, starting with a letter or digit`,
    );
  }
  return eventType;
}

function readEventId(
  locations: readonly FieldLocation[],
  headers: WebhookHeaders,
  body: JsonObject,
): { value: string; origin: EventIdOrigin } | undefined {
  for (const location of locations) {
    const read = readLocation(location, headers, body);
    if (read === undefined) continue;
    // An Idempotency-Key header may be a quoted Structured Field string; the key is inside the quotes.
    const raw = originOf(location) === 'idempotency_key' && typeof read === 'string' ? parseIdempotencyKey(read) : read;
    // Integers are common ids; larger numbers have already lost digits in JSON.parse.
    const value = typeof raw === 'number' && Number.isSafeInteger(raw) ? String(raw) : raw;
    if (typeof value !== 'string' || !EventId.safeParse(value).success) {
      throw new WebhookPayloadError(
        'invalid_event_id',
        `the event id at ${describe(location)} must be a string or an integer of at most 200 printable ASCII characters without spaces`,
      );
    }
    return { value, origin: originOf(location) };
  }
  return undefined;
}

function originOf(location: FieldLocation): EventIdOrigin {
  if ('body' in location) return 'body';
  return location.header.toLowerCase() === 'idempotency-key' ? 'idempotency_key' : 'delivery_id';
}

function occurredAt(config: WebhookSourceConfig, headers: WebhookHeaders, body: JsonObject): string | undefined {
  switch (config.scheme) {
    case 'standard_webhooks': {
      // The payload's `timestamp` is when the event happened and survives retries;
      // the header is when this attempt was signed.
      const stamped = body['timestamp'];
      if (typeof stamped === 'string' && Rfc3339.safeParse(stamped).success) return stamped;
      return singleHeaderTime(headers, 'webhook-timestamp');
    }
    case 'github':
      return undefined;
    case 'hmac_sha256':
      return config.timestamp_header === undefined ? undefined : singleHeaderTime(headers, config.timestamp_header);
    default: {
      const unknown: never = config;
      throw new Error(`unknown webhook scheme: ${(unknown as { scheme: string }).scheme}`);
    }
  }
}

function singleHeaderTime(headers: WebhookHeaders, name: string): string | undefined {
  const values = headerValues(headers, name);
  return values.length === 1 ? tryParseUnixSeconds(values[0])?.toISOString() : undefined;
}

/**
 * The value at a location, `undefined` when absent or JSON `null`. A header
 * sent several times with different values comes back as the array of them,
 * which no caller accepts as a string.
 */
function readLocation(location: FieldLocation, headers: WebhookHeaders, body: JsonObject): unknown {
  if ('header' in location) {
    const values = headerValues(headers, location.header);
    return values.length > 1 ? values : values[0];
  }
  let current: unknown = body;
  for (const key of location.body.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(key)) current = current[Number(key)];
    // Own properties only: a path must not reach Object.prototype.
    else if (isObject(current) && Object.hasOwn(current, key)) current = current[key];
    else return undefined;
  }
  return current ?? undefined;
}

function describe(location: FieldLocation): string {
  return 'header' in location ? `the ${location.header} header` : `body.${location.body}`;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
