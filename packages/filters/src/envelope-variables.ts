import type { EventEnvelope } from '@activity-core/contracts';

/**
 * The event as a filter sees it: the envelope's fields, declared
 * structurally so that callers holding any envelope-shaped value can filter
 * it. Contracts' `EventEnvelope` is assignable to this type (checked below).
 */
export interface FilterableEnvelope {
  readonly event_id: string;
  readonly event_type: string;
  readonly source: string;
  readonly subject?: string | undefined;
  /** RFC 3339 date-time. */
  readonly occurred_at: string;
  readonly data: Readonly<Record<string, unknown>>;
}

// Stops compiling if contracts' envelope and the filterable shape drift apart.
const _envelopesAreFilterable = (envelope: EventEnvelope): FilterableEnvelope => envelope;

/**
 * The variables a filter can read, one per envelope field.
 *
 * | variable      | CEL type                    | value                                        |
 * | ------------- | --------------------------- | -------------------------------------------- |
 * | `event_id`    | `string`                    | the event id                                 |
 * | `event_type`  | `string`                    | the event type                               |
 * | `source`      | `string`                    | the event source                             |
 * | `subject`     | `string`                    | the subject, or `''` when the event has none |
 * | `occurred_at` | `google.protobuf.Timestamp` | `occurred_at` parsed (RFC 3339, nanoseconds) |
 * | `data`        | `map(string, dyn)`          | the payload, as JSON values                  |
 *
 * `subject` is `''` rather than absent because the envelope never carries an
 * empty subject, so `subject != ''` tests presence without a separate macro.
 * `occurred_at` is a timestamp, not a string, so comparisons are by instant
 * whatever offset the sender used:
 * `occurred_at >= timestamp('2026-03-01T00:00:00Z')`,
 * `occurred_at.getHours('Europe/Berlin') < 9`.
 * JSON numbers in `data` are CEL doubles; they compare with int literals
 * (`data.amount > 100`), but integer-only operators need a conversion
 * (`int(data.count) % 2 == 0`).
 */
export const ENVELOPE_VARIABLES = ['event_id', 'event_type', 'source', 'subject', 'occurred_at', 'data'] as const;
/** The name of one envelope variable. */
export type EnvelopeVariable = (typeof ENVELOPE_VARIABLES)[number];

const envelopeVariableNames: ReadonlySet<string> = new Set(ENVELOPE_VARIABLES);

/** True if `name` is one of {@link ENVELOPE_VARIABLES}. */
export function isEnvelopeVariable(name: string): name is EnvelopeVariable {
  return envelopeVariableNames.has(name);
}

/** A `google.protobuf.Timestamp` as the CEL library accepts it. */
interface TimestampMessage {
  readonly $typeName: 'google.protobuf.Timestamp';
  readonly seconds: bigint;
  readonly nanos: number;
}

// Anchored, no nested quantifiers: linear on any input.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses an RFC 3339 date-time into a timestamp, keeping nanoseconds (digits
 * beyond the ninth are truncated). Returns `undefined` if it is not one.
 */
export function parseRfc3339(value: string): TimestampMessage | undefined {
  const match = RFC3339.exec(value);
  if (match === null) return undefined;
  const [, year, month, day, hour, minute, second, fraction = '', zulu, sign, offsetHours, offsetMinutes] = match;
  const fields = [year, month, day, hour, minute, second].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [y, mo, d, h, mi, s] = fields;
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  const utc = new Date(0);
  utc.setUTCFullYear(y, mo - 1, d);
  utc.setUTCHours(h, mi, s, 0);
  // Date rolls over out-of-range fields (month 13, 31 April); reject those.
  if (
    utc.getUTCFullYear() !== y ||
    utc.getUTCMonth() !== mo - 1 ||
    utc.getUTCDate() !== d ||
    utc.getUTCHours() !== h ||
    utc.getUTCMinutes() !== mi ||
    utc.getUTCSeconds() !== s
  ) {
    return undefined;
  }
  let offsetSeconds = 0;
  if (zulu === undefined) {
    const oh = Number(offsetHours);
    const om = Number(offsetMinutes);
    if (oh > 23 || om > 59) return undefined;
    offsetSeconds = (sign === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  return {
    $typeName: 'google.protobuf.Timestamp',
    seconds: BigInt(utc.getTime() / 1000 - offsetSeconds),
    nanos: Number(fraction.slice(0, 9).padEnd(9, '0')),
  };
}

/** Thrown when an envelope cannot be bound (only for envelopes that skipped validation). */
export class EnvelopeBindingError extends Error {
  readonly code = 'envelope_binding_failed';

  constructor(message: string) {
    super(message);
    this.name = 'EnvelopeBindingError';
  }
}

/**
 * Binds the envelope fields a filter references. Fields the filter does not
 * use are not converted, so an odd value there cannot fail an unrelated filter.
 */
export function bindEnvelope(
  envelope: FilterableEnvelope,
  used: ReadonlySet<EnvelopeVariable>,
): Record<string, unknown> {
  const bindings: Record<string, unknown> = {};
  for (const name of used) {
    switch (name) {
      case 'event_id':
      case 'event_type':
      case 'source':
        bindings[name] = envelope[name];
        break;
      case 'subject':
        bindings[name] = envelope.subject ?? '';
        break;
      case 'occurred_at': {
        const timestamp = parseRfc3339(envelope.occurred_at);
        if (timestamp === undefined)
          throw new EnvelopeBindingError(
            `occurred_at is not an RFC 3339 date-time: ${JSON.stringify(envelope.occurred_at)}`,
          );
        bindings[name] = timestamp;
        break;
      }
      case 'data':
        bindings[name] = envelope.data;
        break;
      default:
        return assertNever(name);
    }
  }
  return bindings;
}

function assertNever(value: never): never {
  throw new Error(`unexpected envelope variable ${String(value)}`);
}
