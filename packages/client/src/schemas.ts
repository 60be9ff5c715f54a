/**
 * Request and response shapes the API routes declare inline rather than in
 * `@activity-core/contracts`. Each is a copy of the route's zod schema (the
 * client cannot import the API); `test/client-drift.int.test.ts` compares the
 * type each one describes with the schema the route registers, so a copy
 * cannot drift from the server unnoticed. Shapes the routes take from
 * contracts are imported, not copied.
 */
import {
  CloudEvent,
  EventAcceptedResponse,
  EventEnvelopeInput,
  PauseScheduleRequest,
  RerunLink,
  RerunRequest,
  RunStatus,
  RunWithTasks,
  TriggerType,
} from '@activity-core/contracts';
import {
  GithubSourceConfig,
  HmacSha256SourceConfig,
  StandardWebhooksSourceConfig,
  WebhookSourceName,
} from '@activity-core/webhooks';
import { z } from 'zod';

/** Largest batch `POST /v1/events` takes. */
export const MAX_EVENT_BATCH = 100;

const Rfc3339 = z.iso.datetime({ offset: true });

// --- health -----------------------------------------------------------------

export const Liveness = z.object({ status: z.literal('ok') });
const Check = z.object({
  status: z.enum(['ok', 'failing']),
  reason: z.enum(['unreachable', 'timeout', 'error']).optional(),
});
export const Ready = z.object({ status: z.literal('ready'), checks: z.record(z.string(), Check) });
export const NotReady = z.object({ status: z.literal('not_ready'), checks: z.record(z.string(), Check) });

// --- activities ---------------------------------------------------------------

export const ActivityListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().optional(),
  enabled: z.enum(['true', 'false']).optional(),
});

// --- definition history -----------------------------------------------------------

/** A version number in a path or query: digits, no sign or leading zero (the route also bounds it). */
const VersionNumber = z.string().regex(/^[1-9][0-9]{0,9}$/);
export const VersionListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(100).optional(),
});
export const DiffQuery = z.object({ from: VersionNumber.optional(), to: VersionNumber.optional() });

// --- events ---------------------------------------------------------------------

export const EventsBody = z.union([EventEnvelopeInput, CloudEvent, z.array(z.unknown()).min(1).max(MAX_EVENT_BATCH)]);
export const IdempotencyKeyHeader = z.object({ 'idempotency-key': z.string().min(1).max(200).optional() });

const FieldIssueShape = z.object({ path: z.string(), message: z.string(), code: z.string().optional() });

export const BatchItemResult = z.union([
  EventAcceptedResponse.extend({ index: z.number().int(), ok: z.literal(true) }),
  z.object({
    index: z.number().int(),
    ok: z.literal(false),
    status: z.number().int(),
    title: z.string(),
    detail: z.string(),
    errors: z.array(FieldIssueShape).optional(),
    event_id: z.string().optional(),
  }),
]);
export const EventsResponse = z.union([EventAcceptedResponse, z.object({ results: z.array(BatchItemResult) })]);

/** GET /v1/events/{event_id}: the route's own schema, from contracts. */
export { StoredEvent } from '@activity-core/contracts';

// --- runs -----------------------------------------------------------------------

export const RunListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().optional(),
  activity_id: z.uuid().optional(),
  status: RunStatus.optional(),
  trigger_type: TriggerType.optional(),
  event_id: z.string().min(1).optional(),
});
export const RunDetail = RunWithTasks.extend({
  temporal_ui_url: z.string(),
  rerun_of: z.uuid().nullable(),
  rerun_attempt: z.number().int().nullable(),
  reruns: z.array(RerunLink),
});
/** Printable ASCII without spaces, as trigger now and re-runs take it. */
export const KeyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/)
    .optional(),
});
/** No body at all is a re-run from the start. */
export const OptionalRerunRequest = RerunRequest.nullish();
export const CancelResponse = z.object({ run_id: z.string(), cancel_requested: z.boolean() });

// --- schedules --------------------------------------------------------------------

export const FiresQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  from: Rfc3339.optional(),
  to: Rfc3339.optional(),
  cursor: z.string().optional(),
});
export const OptionalNote = PauseScheduleRequest.nullish();

// --- webhook sources ----------------------------------------------------------------

const shown = {
  secret_hint: z.string().nullable(),
  secret_encrypted: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
};
export const WebhookSourceRecord = z.discriminatedUnion('scheme', [
  StandardWebhooksSourceConfig.omit({ secret: true }).extend(shown),
  GithubSourceConfig.omit({ secret: true }).extend(shown),
  HmacSha256SourceConfig.omit({ secret: true }).extend(shown),
]);
const optionalName = { name: WebhookSourceName.optional() };
export const WebhookSourcePutBody = z.discriminatedUnion('scheme', [
  StandardWebhooksSourceConfig.extend(optionalName),
  GithubSourceConfig.extend(optionalName),
  HmacSha256SourceConfig.extend(optionalName),
]);
export const WebhookSourceList = z.object({ items: z.array(WebhookSourceRecord) });

// --- codec -------------------------------------------------------------------------------

const Base64 = z
  .string()
  .max(16 * 1024 * 1024)
  .regex(/^[A-Za-z0-9+/_-]*={0,2}$/);
const CodecPayload = z.object({ metadata: z.record(z.string().max(200), Base64).optional(), data: Base64.optional() });
export const CodecPayloads = z.object({ payloads: z.array(CodecPayload).max(1_000) });
export const CodecHeaders = z.object({ 'x-namespace': z.string().max(200).optional() });

// --- types ---------------------------------------------------------------------------------

export type Readiness = z.output<typeof Ready> | z.output<typeof NotReady>;
/** One event as a sender posts it: an envelope (event_id optional) or a CloudEvent. */
export type EventInput = z.input<typeof EventEnvelopeInput> | z.input<typeof CloudEvent>;
export type EventsResponse = z.output<typeof EventsResponse>;
export type BatchItemResult = z.output<typeof BatchItemResult>;
export type RunDetail = z.output<typeof RunDetail>;
export type CancelResponse = z.output<typeof CancelResponse>;
export type WebhookSourceRecord = z.output<typeof WebhookSourceRecord>;
export type WebhookSourceInput = z.input<typeof WebhookSourcePutBody>;
export type CodecPayloads = z.output<typeof CodecPayloads>;
