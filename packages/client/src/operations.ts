/**
 * Every operation of the activity-core HTTP API, one entry per method and
 * path of the served OpenAPI document (`/openapi.json`). The client's methods
 * call these entries and nothing else. Every schema here is the very object
 * the route validates and documents with (from `@activity-core/contracts` or
 * `@activity-core/webhooks`); `test/client-drift.int.test.ts` checks that,
 * and that this table and the served document list the same operations.
 */
import {
  ActivityDefinition,
  ActivityListQuery,
  ActivityPage,
  ActivityRecord,
  ActivitySchedules,
  ActivityVersion,
  ActivityVersionPage,
  AuditPage,
  AuditQuery,
  BackfillRequest,
  BackfillResponse,
  BulkReplayDryRun,
  BulkReplayRecord,
  BulkReplayRequest,
  BulkRerunDryRun,
  BulkRerunRecord,
  BulkRerunRequest,
  CancelResponse,
  CodecHeaders,
  CodecPayloads,
  DeadLetterDiscardResponse,
  DeadLetterListQuery,
  DeadLetterPage,
  DeadLetterRetryResponse,
  DeadLetterSelection,
  DefinitionDiff,
  DiffQuery,
  EnableActivityQuery,
  EnableActivityResponse,
  EventAcceptedResponse,
  EventsBody,
  EventsResponse,
  FireExplanation,
  FirePage,
  FiresQuery,
  HeldDiscardResponse,
  HeldEventListQuery,
  HeldEventPage,
  HeldReleaseResponse,
  IdempotencyKeyHeader,
  KeyHeaders,
  Liveness,
  MetricsText,
  NoContent,
  NotReady,
  OptionalDisableActivityRequest,
  OptionalHeldDiscardRequest,
  OptionalHeldReleaseRequest,
  OptionalNote,
  OptionalRerunRequest,
  Ready,
  ReconcileQuery,
  ReconcileResponse,
  OptionalReplayRequest,
  ReplayResponse,
  RerunResponse,
  ResumeResponse,
  RunDetail,
  RunListQuery,
  RunPage,
  StoredEvent,
  TriggerNowResponse,
  VersionListQuery,
} from '@activity-core/contracts';
import {
  WebhookSourceBody,
  WebhookSourceList,
  WebhookSourcePutBody,
  WebhookSourceRecord,
} from '@activity-core/webhooks';
import type { z } from 'zod';

/**
 * When a request may be sent again after a network error, a 5xx or a 429:
 * - `safe`: repeating it cannot change the outcome (reads, PUTs, idempotent actions);
 * - `keyed`: safe because the client sends the same Idempotency-Key (or ids) every time;
 * - `never`: a repeat could do the work twice, or answers differently (POST create, DELETE).
 */
export type RetryMode = 'safe' | 'keyed' | 'never';

export interface OperationSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** OpenAPI path template, e.g. `/v1/activities/{id}`. */
  path: string;
  /** The JSON body schema: the very schema the route validates with. */
  body?: z.ZodType;
  /** The body is sent as raw bytes (webhook deliveries: the signature covers them). */
  rawBody?: true;
  query?: z.ZodType;
  headers?: z.ZodType;
  /** Answers that are results, by status; every other status is a problem (an exception). */
  responses: Readonly<Record<number, z.ZodType>>;
  /** The answer is text, not JSON (Prometheus metrics). */
  text?: true;
  retry: RetryMode;
}

export const operations = {
  getLiveness: { method: 'GET', path: '/healthz', responses: { 200: Liveness }, retry: 'safe' },
  getReadiness: { method: 'GET', path: '/readyz', responses: { 200: Ready, 503: NotReady }, retry: 'safe' },
  getMetrics: { method: 'GET', path: '/metrics', responses: { 200: MetricsText }, text: true, retry: 'safe' },

  createActivity: {
    method: 'POST',
    path: '/v1/activities',
    body: ActivityDefinition,
    responses: { 201: ActivityRecord },
    retry: 'never',
  },
  listActivities: {
    method: 'GET',
    path: '/v1/activities',
    query: ActivityListQuery,
    responses: { 200: ActivityPage },
    retry: 'safe',
  },
  putActivity: {
    method: 'PUT',
    path: '/v1/activities/{id}',
    body: ActivityDefinition,
    responses: { 200: ActivityRecord, 201: ActivityRecord },
    retry: 'safe',
  },
  getActivity: { method: 'GET', path: '/v1/activities/{id}', responses: { 200: ActivityRecord }, retry: 'safe' },
  deleteActivity: { method: 'DELETE', path: '/v1/activities/{id}', responses: { 204: NoContent }, retry: 'never' },
  enableActivity: {
    method: 'POST',
    path: '/v1/activities/{id}/enable',
    query: EnableActivityQuery,
    responses: { 200: EnableActivityResponse },
    retry: 'safe',
  },
  disableActivity: {
    method: 'POST',
    path: '/v1/activities/{id}/disable',
    body: OptionalDisableActivityRequest,
    responses: { 200: ActivityRecord },
    retry: 'safe',
  },
  listHeldEvents: {
    method: 'GET',
    path: '/v1/activities/{id}/held-events',
    query: HeldEventListQuery,
    responses: { 200: HeldEventPage },
    retry: 'safe',
  },
  // Safe to repeat: a released or discarded event is no longer held, so a second request finds nothing to do.
  releaseHeldEvents: {
    method: 'POST',
    path: '/v1/activities/{id}/held-events/release',
    body: OptionalHeldReleaseRequest,
    responses: { 200: HeldReleaseResponse },
    retry: 'safe',
  },
  discardHeldEvents: {
    method: 'POST',
    path: '/v1/activities/{id}/held-events/discard',
    body: OptionalHeldDiscardRequest,
    responses: { 200: HeldDiscardResponse },
    retry: 'safe',
  },
  listActivityVersions: {
    method: 'GET',
    path: '/v1/activities/{id}/versions',
    query: VersionListQuery,
    responses: { 200: ActivityVersionPage },
    retry: 'safe',
  },
  getActivityVersion: {
    method: 'GET',
    path: '/v1/activities/{id}/versions/{version}',
    responses: { 200: ActivityVersion },
    retry: 'safe',
  },
  diffActivityVersions: {
    method: 'GET',
    path: '/v1/activities/{id}/diff',
    query: DiffQuery,
    responses: { 200: DefinitionDiff },
    retry: 'safe',
  },

  sendEvents: {
    method: 'POST',
    path: '/v1/events',
    body: EventsBody,
    headers: IdempotencyKeyHeader,
    responses: { 202: EventsResponse },
    retry: 'keyed',
  },
  getEvent: { method: 'GET', path: '/v1/events/{event_id}', responses: { 200: StoredEvent }, retry: 'safe' },
  // Keyed: the same key names the same forced replay; an if_no_runs replay starts nothing twice whatever the key.
  replayEvent: {
    method: 'POST',
    path: '/v1/events/{event_id}/replay',
    body: OptionalReplayRequest,
    headers: KeyHeaders,
    responses: { 200: ReplayResponse },
    retry: 'keyed',
  },
  bulkReplay: {
    method: 'POST',
    path: '/v1/events/replay',
    body: BulkReplayRequest,
    headers: KeyHeaders,
    responses: { 200: BulkReplayDryRun, 202: BulkReplayRecord },
    retry: 'keyed',
  },
  getBulkReplay: { method: 'GET', path: '/v1/events/replay/{id}', responses: { 200: BulkReplayRecord }, retry: 'safe' },
  listDeadLetters: {
    method: 'GET',
    path: '/v1/dead-letters',
    query: DeadLetterListQuery,
    responses: { 200: DeadLetterPage },
    retry: 'safe',
  },
  // Safe to repeat: a retried dead letter is no longer one (a second retry starts nothing), a discard is recorded once.
  retryDeadLetters: {
    method: 'POST',
    path: '/v1/dead-letters/retry',
    body: DeadLetterSelection,
    responses: { 200: DeadLetterRetryResponse },
    retry: 'safe',
  },
  discardDeadLetters: {
    method: 'POST',
    path: '/v1/dead-letters/discard',
    body: DeadLetterSelection,
    responses: { 200: DeadLetterDiscardResponse },
    retry: 'safe',
  },

  listRuns: { method: 'GET', path: '/v1/runs', query: RunListQuery, responses: { 200: RunPage }, retry: 'safe' },
  getRun: { method: 'GET', path: '/v1/runs/{run_id}', responses: { 200: RunDetail }, retry: 'safe' },
  cancelRun: { method: 'POST', path: '/v1/runs/{run_id}/cancel', responses: { 202: CancelResponse }, retry: 'safe' },
  // Keyed: the client sends one Idempotency-Key per call, and the same key names the same re-run.
  rerunRun: {
    method: 'POST',
    path: '/v1/runs/{run_id}/rerun',
    body: OptionalRerunRequest,
    headers: KeyHeaders,
    responses: { 202: RerunResponse },
    retry: 'keyed',
  },
  bulkRerun: {
    method: 'POST',
    path: '/v1/runs/rerun',
    body: BulkRerunRequest,
    headers: KeyHeaders,
    responses: { 200: BulkRerunDryRun, 202: BulkRerunRecord },
    retry: 'keyed',
  },
  getBulkRerun: { method: 'GET', path: '/v1/runs/rerun/{id}', responses: { 200: BulkRerunRecord }, retry: 'safe' },

  describeSchedules: {
    method: 'GET',
    path: '/v1/activities/{id}/schedules',
    responses: { 200: ActivitySchedules },
    retry: 'safe',
  },
  pauseSchedules: {
    method: 'POST',
    path: '/v1/activities/{id}/schedules/pause',
    body: OptionalNote,
    responses: { 200: ActivitySchedules },
    retry: 'safe',
  },
  resumeSchedules: {
    method: 'POST',
    path: '/v1/activities/{id}/schedules/resume',
    body: OptionalNote,
    responses: { 200: ResumeResponse },
    retry: 'safe',
  },
  triggerNow: {
    method: 'POST',
    path: '/v1/activities/{id}/schedules/trigger',
    headers: KeyHeaders,
    responses: { 202: TriggerNowResponse },
    retry: 'keyed',
  },
  backfill: {
    method: 'POST',
    path: '/v1/activities/{id}/schedules/backfill',
    body: BackfillRequest,
    responses: { 200: BackfillResponse },
    retry: 'safe',
  },
  listFires: {
    method: 'GET',
    path: '/v1/activities/{id}/fires',
    query: FiresQuery,
    responses: { 200: FirePage },
    retry: 'safe',
  },
  explainFire: {
    method: 'GET',
    path: '/v1/activities/{id}/fires/{scheduled_for}',
    responses: { 200: FireExplanation },
    retry: 'safe',
  },
  reconcileSchedules: {
    method: 'POST',
    path: '/v1/schedules/reconcile',
    query: ReconcileQuery,
    responses: { 200: ReconcileResponse },
    retry: 'safe',
  },

  createWebhookSource: {
    method: 'POST',
    path: '/v1/webhook-sources',
    body: WebhookSourceBody,
    responses: { 201: WebhookSourceRecord },
    retry: 'never',
  },
  listWebhookSources: {
    method: 'GET',
    path: '/v1/webhook-sources',
    responses: { 200: WebhookSourceList },
    retry: 'safe',
  },
  putWebhookSource: {
    method: 'PUT',
    path: '/v1/webhook-sources/{name}',
    body: WebhookSourcePutBody,
    responses: { 200: WebhookSourceRecord, 201: WebhookSourceRecord },
    retry: 'safe',
  },
  getWebhookSource: {
    method: 'GET',
    path: '/v1/webhook-sources/{name}',
    responses: { 200: WebhookSourceRecord },
    retry: 'safe',
  },
  deleteWebhookSource: {
    method: 'DELETE',
    path: '/v1/webhook-sources/{name}',
    responses: { 204: NoContent },
    retry: 'never',
  },
  // Redeliveries carry the same delivery id and answer `duplicate`.
  deliverWebhook: {
    method: 'POST',
    path: '/v1/webhooks/{source}',
    rawBody: true,
    responses: { 202: EventAcceptedResponse },
    retry: 'safe',
  },

  listAudit: { method: 'GET', path: '/v1/audit', query: AuditQuery, responses: { 200: AuditPage }, retry: 'safe' },

  codecDecode: {
    method: 'POST',
    path: '/codec/decode',
    body: CodecPayloads,
    headers: CodecHeaders,
    responses: { 200: CodecPayloads },
    retry: 'safe',
  },
  codecEncode: {
    method: 'POST',
    path: '/codec/encode',
    body: CodecPayloads,
    headers: CodecHeaders,
    responses: { 200: CodecPayloads },
    retry: 'safe',
  },
} as const satisfies Record<string, OperationSpec>;

export type Operations = typeof operations;
export type OperationName = keyof Operations;

type ResponsesOf<N extends OperationName> = Operations[N]['responses'];
/** What a successful call of operation N returns: the union of its result schemas' outputs. */
export type ResultOf<N extends OperationName> = {
  [S in keyof ResponsesOf<N>]: ResponsesOf<N>[S] extends z.ZodType ? z.output<ResponsesOf<N>[S]> : never;
}[keyof ResponsesOf<N>];
