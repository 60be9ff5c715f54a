import { z } from 'zod';
import { Rfc3339DateTime } from './date-time';
import { ActivityRecord, EventAcceptedResponse, Page, RunRecord, RunStatus, RunWithTasks, TriggerType } from './api';
import { AuditEntry } from './audit';
import { MAX_DEFINITION_VERSION } from './definition-history';
import { FieldIssue } from './errors';
import { CloudEvent, EventEnvelopeInput } from './event-envelope';
import { RerunLink, RerunRequest } from './reruns';
import { pageCursor } from './page-cursor';
import { integerRangePattern } from './schema-patterns';
import { FireRecord, PauseScheduleRequest } from './schedules';

/**
 * The request and response schemas of the HTTP API that are not domain
 * models of their own: queries, headers, optional bodies, pages and small
 * answers. Declared once, here: the API's routes validate and document with
 * them, and the typed client (`@activity-core/client`) types its requests and
 * results with the very same objects.
 */

// --- shared ---------------------------------------------------------------------

/** A 204 answer: no content. */
export const NoContent = z.null();

/** `GET /metrics`: the Prometheus text exposition format, sent as text. */
export const MetricsText = z.string();

/** An Idempotency-Key header that names a run or a re-run (it ends up in workflow ids): printable ASCII without spaces. */
export const KeyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
});

/** A UUID in a path, read in lowercase (ids are stored lowercase). */
export const PathUuid = z.uuid({ message: 'must be a UUID' }).transform((id) => id.toLowerCase());
/** `{id}` of an activity or of a bulk re-run. */
export const IdParams = z.object({ id: PathUuid });

// --- health ---------------------------------------------------------------------

/**
 * One dependency's verdict, public: `reason` is a fixed class, never the
 * driver's message (which names hosts, ports, users). The detail is logged.
 */
export const ReadinessCheck = z.object({
  status: z.enum(['ok', 'failing']),
  reason: z.enum(['unreachable', 'timeout', 'error']).optional(),
});
export type ReadinessCheck = z.infer<typeof ReadinessCheck>;
export const Liveness = z.object({ status: z.literal('ok') });
export const Ready = z.object({ status: z.literal('ready'), checks: z.record(z.string(), ReadinessCheck) });
export const NotReady = z.object({ status: z.literal('not_ready'), checks: z.record(z.string(), ReadinessCheck) });
export type Readiness = z.output<typeof Ready> | z.output<typeof NotReady>;

// --- activities -----------------------------------------------------------------

export const ActivityPage = Page(ActivityRecord);
export const ActivityListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: pageCursor(),
  enabled: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional(),
});

// --- definition history ---------------------------------------------------------

const VERSION_MESSAGE = `must be a version number: a whole number from 1 to ${MAX_DEFINITION_VERSION}`;

/**
 * A version number in a path or query: digits only (no sign, exponent, hex
 * or leading zero, which a numeric coercion would let through), at most the
 * largest version Postgres stores.
 */
export const VersionNumber = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, VERSION_MESSAGE)
  .transform(Number)
  .refine((version) => version <= MAX_DEFINITION_VERSION, VERSION_MESSAGE)
  .meta({
    description: `A version number, 1 to ${MAX_DEFINITION_VERSION}.`,
    example: '3',
    pattern: `^(?:${integerRangePattern(1, MAX_DEFINITION_VERSION)})$`,
  });
export const VersionListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: pageCursor(100),
});
export const DiffQuery = z.object({
  from: VersionNumber.optional().meta({
    description: 'The version the patch starts from. Default: the version before `to`.',
  }),
  to: VersionNumber.optional().meta({ description: 'The version the patch leads to. Default: the current version.' }),
});

// --- events ---------------------------------------------------------------------

/** Largest batch `POST /v1/events` takes. */
export const MAX_EVENT_BATCH = 100;

/** `POST /v1/events` as JSON: one envelope, one CloudEvent, or a batch of 1 to 100 (each item checked on its own). */
export const EventsBody = z.union([
  EventEnvelopeInput,
  CloudEvent,
  z
    .array(z.unknown())
    .min(1, 'a batch needs at least one event')
    .max(MAX_EVENT_BATCH, `a batch holds at most ${MAX_EVENT_BATCH} events`),
]);
/** One event as a sender posts it: an envelope (event_id optional) or a CloudEvent. */
export type EventInput = z.input<typeof EventEnvelopeInput> | z.input<typeof CloudEvent>;
export const IdempotencyKeyHeader = z.object({ 'idempotency-key': z.string().min(1).max(200).optional() });

/** One item's answer in a batch: accepted like a single event, or refused like one (status, title, detail, errors). */
export const BatchItemResult = z.union([
  EventAcceptedResponse.extend({ index: z.number().int(), ok: z.literal(true) }),
  z.object({
    index: z.number().int(),
    ok: z.literal(false),
    status: z.number().int(),
    title: z.string(),
    detail: z.string(),
    errors: z.array(FieldIssue).optional(),
    event_id: z.string().optional().meta({
      description:
        'The id the item has (given, derived from Idempotency-Key, or assigned): resend the item with it so a retry cannot double it.',
    }),
  }),
]);
export type BatchItemResult = z.output<typeof BatchItemResult>;
export const EventsResponse = z.union([EventAcceptedResponse, z.object({ results: z.array(BatchItemResult) })]);
export type EventsResponse = z.output<typeof EventsResponse>;

// --- runs -----------------------------------------------------------------------

export const RunPage = Page(RunRecord);
export const RunListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: pageCursor(),
  activity_id: z
    .uuid()
    .transform((id) => id.toLowerCase())
    .optional(),
  status: RunStatus.optional(),
  trigger_type: TriggerType.optional(),
  event_id: z.string().min(1).optional(),
});
/** A run with its tasks and its re-run chain. */
export const RunDetail = RunWithTasks.extend({
  temporal_ui_url: z.string(),
  /** The original run, when this run is a re-run. */
  rerun_of: z.uuid().nullable(),
  rerun_attempt: z.number().int().nullable(),
  /** Every re-run of the original (this run's, or the one it re-runs), oldest first. */
  reruns: z.array(RerunLink),
});
export type RunDetail = z.output<typeof RunDetail>;
/** The body is optional: none at all is a re-run from the start. */
export const OptionalRerunRequest = RerunRequest.nullish().transform((body): RerunRequest => body ?? { from: 'start' });
export const CancelResponse = z.object({ run_id: z.string(), cancel_requested: z.boolean() });
export type CancelResponse = z.output<typeof CancelResponse>;

// --- schedules ------------------------------------------------------------------

export const FirePage = Page(FireRecord);
export const FiresQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  /** Only fire times at or after this instant. */
  from: Rfc3339DateTime.optional(),
  /** Only fire times at or before this instant. */
  to: Rfc3339DateTime.optional(),
  cursor: pageCursor(),
});
/** Pause and resume take an optional JSON body; none at all is fine too. */
export const OptionalNote = PauseScheduleRequest.nullish().transform((body) => body ?? {});

// --- audit ----------------------------------------------------------------------

export const AuditPage = Page(AuditEntry);

// --- codec ----------------------------------------------------------------------

/** Most payloads one codec request may carry (a history page holds far fewer). */
export const MAX_CODEC_PAYLOADS = 1_000;

const Base64 = z
  .string()
  .max(16 * 1024 * 1024)
  .regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
export const CodecPayload = z
  .object({ metadata: z.record(z.string().max(200), Base64).optional(), data: Base64.optional() })
  .meta({ id: 'CodecPayload' });
export const CodecPayloads = z
  .object({ payloads: z.array(CodecPayload).max(MAX_CODEC_PAYLOADS) })
  .meta({ description: 'Temporal remote codec protocol: payloads as proto3 JSON, every bytes value base64.' });
export type CodecPayloads = z.output<typeof CodecPayloads>;
export const CodecHeaders = z.object({ 'x-namespace': z.string().max(200).optional() });
