/**
 * Deterministic identifiers (formats and rules: docs/idempotency.md,
 * "Identifiers"). Interoperability depends on these exact
 * formats, so every id in the system is built here and nowhere else.
 *
 * This module is imported by workflow code: it must stay deterministic and must
 * not import Node built-ins. SHA-1 for UUIDv5 comes from @noble/hashes, which
 * is pure JavaScript and runs inside the workflow sandbox.
 */
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';

/**
 * Namespace for every UUIDv5 activity-core derives (run ids, task instance
 * ids). Fixed forever: changing it would change every run id ever issued.
 */
export const ACTIVITY_CORE_UUID_NAMESPACE = 'c7261860-0e71-4c86-ba1d-103277a51752';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function uuidToBytes(uuid: string): Uint8Array {
  const hex = uuid.replace(/-/g, '');
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 16; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function bytesToUuid(bytes: Uint8Array): string {
  let hex = '';
  for (let i = 0; i < 16; i++) hex += (bytes[i] ?? 0).toString(16).padStart(2, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** RFC 9562 UUIDv5: SHA-1 of namespace bytes followed by the UTF-8 name. */
export function uuidv5(name: string, namespace: string = ACTIVITY_CORE_UUID_NAMESPACE): string {
  if (!UUID_RE.test(namespace)) throw new Error(`namespace is not a lowercase UUID: ${namespace}`);
  const nameBytes = new TextEncoder().encode(name);
  const input = new Uint8Array(16 + nameBytes.length);
  input.set(uuidToBytes(namespace), 0);
  input.set(nameBytes, 16);
  const hash = sha1(input);
  const bytes = hash.slice(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  return bytesToUuid(bytes);
}

export function isLowercaseUuid(value: string): boolean {
  return UUID_RE.test(value);
}

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * The fire time an instant names, as a Date: the instant truncated to whole
 * seconds (never rounded). This is the one reader of fire times that arrive in
 * a form other than the canonical one: a Date from a clock or a driver, or any
 * RFC 3339 date-time with `Z` or a `±HH:MM` offset and optional fractions —
 * Temporal's `TemporalScheduledStartTime` as the tick workflow passes it on
 * (`2026-03-01T09:00:00.000Z`), an instant in an API path or query. Throws on
 * anything else, including impossible calendar dates (`2026-02-30`).
 */
export function toScheduledFor(value: Date | string): Date {
  if (value instanceof Date) {
    const ms = value.getTime();
    if (Number.isNaN(ms)) throw new Error('scheduled_for is not a valid date');
    return new Date(Math.floor(ms / 1000) * 1000);
  }
  const match = RFC3339_RE.exec(value);
  if (match === null)
    throw new Error(
      `scheduled_for must be an RFC 3339 date-time such as 2026-03-01T09:00:00+00:00, got ${JSON.stringify(value.slice(0, 64))}`,
    );
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wallClock = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
  wallClock.setUTCFullYear(year, month - 1, day);
  wallClock.setUTCHours(hour, minute, second, 0);
  const offsetHours = match[8] === undefined ? 0 : Number(match[8]);
  const offsetMinutes = match[9] === undefined ? 0 : Number(match[9]);
  if (
    wallClock.getUTCFullYear() !== year ||
    wallClock.getUTCMonth() !== month - 1 ||
    wallClock.getUTCDate() !== day ||
    wallClock.getUTCHours() !== hour ||
    wallClock.getUTCMinutes() !== minute ||
    wallClock.getUTCSeconds() !== second ||
    offsetHours > 23 ||
    offsetMinutes > 59
  ) {
    throw new Error(`scheduled_for is not a real instant: ${JSON.stringify(value.slice(0, 64))}`);
  }
  const offsetMs = (match[7] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return new Date(wallClock.getTime() - offsetMs);
}

/**
 * The canonical string of a fire time, and the only place it is produced:
 * `YYYY-MM-DDTHH:MM:SS+00:00`, like Python's `datetime.isoformat()` for an
 * aware UTC datetime with whole seconds. Never `Z`, never fractions:
 * sub-second parts are truncated (a nominal fire time never has them;
 * truncating keeps an id stable if one slips in from a clock). It is the
 * `{scheduled_for}` of `activity-{activity_id}:{scheduled_for}` and of every
 * `scheduled_for` field the API answers.
 */
export function formatScheduledFor(instant: Date): string {
  return `${toScheduledFor(instant).toISOString().slice(0, 19)}+00:00`;
}

const SCHEDULED_FOR_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

/**
 * Parses the canonical `scheduled_for` form (and only that form) back into a
 * Date; throws on anything else. For fire times that may arrive in another
 * RFC 3339 form, use {@link toScheduledFor}.
 */
export function parseScheduledFor(value: string): Date {
  if (!SCHEDULED_FOR_RE.test(value)) {
    throw new Error(
      `scheduled_for must look like 2026-03-01T09:00:00+00:00, got ${JSON.stringify(value.slice(0, 64))}`,
    );
  }
  return toScheduledFor(value);
}

function assertActivityId(activityId: string): void {
  if (!UUID_RE.test(activityId)) throw new Error(`activity_id must be a lowercase UUID, got ${activityId}`);
}

/** `activity-{activity_id}:{scheduled_for}` — the run of one nominal cron fire time. */
export function cronRunWorkflowId(activityId: string, scheduledFor: Date): string {
  assertActivityId(activityId);
  return `activity-${activityId}:${formatScheduledFor(scheduledFor)}`;
}

/** `activity-{activity_id}:{event_id}` — the run one event causes for one activity. */
export function eventRunWorkflowId(activityId: string, eventId: string): string {
  assertActivityId(activityId);
  if (eventId.length === 0) throw new Error('event_id must not be empty');
  return `activity-${activityId}:${eventId}`;
}

/** The prefix of the part after `activity-{activity_id}:` in a batch's run id; event ids starting with it are refused. */
export const BATCH_RUN_ID_PREFIX = 'batch:';

/**
 * `activity-{activity_id}:batch:{window_id}` — the one run of a batch
 * (docs/coalescing.md, "Batching"): deterministic from the batch (its window's
 * row id, a UUID), in the `activity-{activity_id}:…` form every event run has,
 * so a run of a batch is listed and found like any other run of the activity.
 * It can never equal an event's run id: `POST /v1/events` refuses event ids
 * starting with `batch:` ({@link reservedEventIdReason}), and every other
 * stored event id starts with a prefix of its own (`wh:`, `src:`, `emit-`,
 * `evt_`, `run-failed:`, `run-cancelled:`).
 */
export function batchRunWorkflowId(activityId: string, windowId: string): string {
  assertActivityId(activityId);
  if (!UUID_RE.test(windowId)) throw new Error(`window_id must be a lowercase UUID, got ${windowId}`);
  return `activity-${activityId}:${BATCH_RUN_ID_PREFIX}${windowId}`;
}

/** The activity and batch window a batch's run id names, or undefined when it is not one. */
export function parseBatchRunWorkflowId(workflowId: string): { activityId: string; windowId: string } | undefined {
  const match = /^activity-([0-9a-f-]{36}):batch:([0-9a-f-]{36})$/.exec(workflowId);
  if (match === null || !UUID_RE.test(match[1]!) || !UUID_RE.test(match[2]!)) return undefined;
  return { activityId: match[1]!, windowId: match[2]! };
}

/**
 * `manual-{activity_id}:{key}` — an operator's "trigger now". The `manual-`
 * prefix can never collide with the `activity-` ids above, whatever an event
 * id contains. The key is the request's Idempotency-Key, so a retried request
 * is the same run. (Backfills reuse the cron format on purpose: a backfilled
 * fire time and a normal fire of the same nominal time are the same run.)
 */
export function manualRunWorkflowId(activityId: string, key: string): string {
  assertActivityId(activityId);
  if (key.length === 0) throw new Error('manual trigger key must not be empty');
  return `manual-${activityId}:${key}`;
}

/** The key of a `manual-{activity_id}:{key}` run of `activityId`, or undefined when `workflowId` is not one. */
export function parseManualRunWorkflowId(workflowId: string, activityId: string): string | undefined {
  const prefix = `manual-${activityId}:`;
  return workflowId.startsWith(prefix) ? workflowId.slice(prefix.length) : undefined;
}

/**
 * `call-{activity_id}:{parent_run_id}:{index}` (`…:{item}` for an item of a
 * `for_each` task) — the run a `run_activity` task starts: derived from the
 * calling run and the task, so a retried or replayed task finds its run
 * instead of starting another. The `call-` prefix collides with no other run id.
 */
export function calledRunWorkflowId(activityId: string, parentRunId: string, index: number, item?: number): string {
  assertActivityId(activityId);
  if (!UUID_RE.test(parentRunId)) throw new Error(`parent run_id must be a lowercase UUID, got ${parentRunId}`);
  if (!Number.isInteger(index) || index < 0) throw new Error(`task index must be a non-negative integer, got ${index}`);
  return `call-${activityId}:${parentRunId}:${index}${item === undefined ? '' : `:${item}`}`;
}

/**
 * The concurrency coordinator of one activity and one key: `concurrency-{activity_id}`
 * for the activity-wide key (`''`), `concurrency-{activity_id}:{hash}` otherwise,
 * `hash` being the first 32 hex digits of the SHA-256 of the key's UTF-8 bytes
 * (keys are user data of any length and any characters; the hash keeps the id
 * short and free of them). One coordinator workflow per id hands out the slots.
 */
export function concurrencyCoordinatorWorkflowId(activityId: string, key: string): string {
  assertActivityId(activityId);
  if (key === '') return `concurrency-${activityId}`;
  let hex = '';
  for (const byte of sha256(new TextEncoder().encode(key))) hex += byte.toString(16).padStart(2, '0');
  return `concurrency-${activityId}:${hex.slice(0, 32)}`;
}

/** First 32 hex digits of the SHA-256 of a key's UTF-8 bytes: user data of any length and characters, kept out of ids. */
function keyHash(key: string): string {
  let hex = '';
  for (const byte of sha256(new TextEncoder().encode(key))) hex += byte.toString(16).padStart(2, '0');
  return hex.slice(0, 32);
}

/**
 * `coalesce-{activity_id}:{key_hash}:{window_id}` — the workflow that holds the
 * timer of one open debounce window (docs/coalescing.md): `key_hash` is the
 * first 32 hex digits of the SHA-256 of the key (so a key can never change the
 * id's structure), `window_id` the window's row id (a UUID), so each window of
 * a key has its own workflow.
 */
export function coalesceWindowWorkflowId(activityId: string, key: string, windowId: string): string {
  assertActivityId(activityId);
  if (!UUID_RE.test(windowId)) throw new Error(`window_id must be a lowercase UUID, got ${windowId}`);
  return `coalesce-${activityId}:${keyHash(key)}:${windowId}`;
}

/** The activity and window a `coalesce-…` workflow id names, or undefined when it is not one. */
export function parseCoalesceWindowWorkflowId(
  workflowId: string,
): { activityId: string; keyHash: string; windowId: string } | undefined {
  const match = /^coalesce-([0-9a-f-]{36}):([0-9a-f]{32}):([0-9a-f-]{36})$/.exec(workflowId);
  if (match === null || !UUID_RE.test(match[1]!) || !UUID_RE.test(match[3]!)) return undefined;
  return { activityId: match[1]!, keyHash: match[2]!, windowId: match[3]! };
}

/**
 * `overlap-{activity_id}-{trigger_index}` — the coordinator that applies one
 * cron trigger's overlap policy to its runs (one slot, held by the run of the
 * trigger that is going). The same workflow type as the concurrency
 * coordinators, under a prefix of its own: a concurrency key's value can never
 * name it.
 */
export function cronOverlapCoordinatorWorkflowId(activityId: string, triggerIndex: number): string {
  assertActivityId(activityId);
  assertTriggerIndex(triggerIndex);
  return `overlap-${activityId}-${triggerIndex}`;
}

/** `task-{run_id}:{task_type}:{index}` — one task of one run. */
export function taskWorkflowId(runId: string, taskType: string, index: number): string {
  if (!UUID_RE.test(runId)) throw new Error(`run_id must be a lowercase UUID, got ${runId}`);
  if (!Number.isInteger(index) || index < 0) throw new Error(`task index must be a non-negative integer, got ${index}`);
  return `task-${runId}:${taskType}:${index}`;
}

/**
 * `task-{run_id}:{task_type}:{index}:{item}` — one item of a `for_each` task:
 * the task's own id with the item's 0-based position appended, so every item
 * of every run has one id whatever order the items run in. A task that is not
 * fanned out keeps the three-part form.
 */
export function taskItemWorkflowId(runId: string, taskType: string, index: number, item: number): string {
  if (!Number.isInteger(item) || item < 0) throw new Error(`item index must be a non-negative integer, got ${item}`);
  return `${taskWorkflowId(runId, taskType, index)}:${item}`;
}

function assertTriggerIndex(triggerIndex: number): void {
  if (!Number.isInteger(triggerIndex) || triggerIndex < 0)
    throw new Error(`trigger index must be a non-negative integer, got ${triggerIndex}`);
}

/**
 * `schedule-{activity_id}-{trigger_index}` — the Temporal Schedule behind one
 * cron trigger (the trigger's 0-based position in the definition). Stored in
 * `schedule_states.schedule_id` and named in Temporal; never changes.
 */
export function temporalScheduleId(activityId: string, triggerIndex: number): string {
  assertActivityId(activityId);
  assertTriggerIndex(triggerIndex);
  return `schedule-${activityId}-${triggerIndex}`;
}

/**
 * `schedule-tick-{activity_id}-{trigger_index}` — the workflow id a cron
 * trigger's Temporal Schedule gives its `ScheduleTickWorkflow` action.
 * Temporal itself appends `-{nominal time}` (its own RFC 3339 `Z` form) to it
 * for each fire, so tick ids seen in Temporal are
 * `schedule-tick-{activity_id}-{trigger_index}-2026-03-01T09:00:00Z`.
 */
export function scheduleTickWorkflowId(activityId: string, triggerIndex: number): string {
  assertActivityId(activityId);
  assertTriggerIndex(triggerIndex);
  return `schedule-tick-${activityId}-${triggerIndex}`;
}

/**
 * `schedule-tick-{activity_id}-{trigger_index}-resume-{requested_at}` — the
 * tick an operator's resume starts at once for one trigger, `requested_at`
 * being the resume's instant as `Date.toISOString()` writes it
 * (`2026-03-01T09:00:00.123Z`, milliseconds included: two resumes in the same
 * second are two ticks). Not a fire time, so not the `scheduled_for` form.
 */
export function resumeTickWorkflowId(activityId: string, triggerIndex: number, requestedAt: Date): string {
  if (Number.isNaN(requestedAt.getTime())) throw new Error('requested_at is not a valid date');
  return `${scheduleTickWorkflowId(activityId, triggerIndex)}-resume-${requestedAt.toISOString()}`;
}

/**
 * The run id: UUIDv5 of the run workflow id. Derived from the workflow id,
 * never from Temporal's run id, so it survives replay, worker restart,
 * workflow retry and reset (Temporal's run id changes on retry, reset and
 * continue-as-new, so nothing may be keyed on it).
 */
export function runIdFor(runWorkflowId: string): string {
  return uuidv5(runWorkflowId);
}

/** The task instance primary key: UUIDv5 of the task workflow id. */
export function taskInstanceIdFor(taskWorkflowIdValue: string): string {
  return uuidv5(taskWorkflowIdValue);
}

/**
 * The event id a task's `emit_event` produces: derived from the run and the
 * task index (and the item, for an item of a `for_each` task), so a retried or
 * replayed task emits the same event and the chain it starts never duplicates.
 */
export function emittedEventId(runId: string, index: number, item?: number): string {
  return item === undefined ? `emit-${runId}:${index}` : `emit-${runId}:${index}:${item}`;
}

/** The terminal run statuses that announce themselves with a system event (docs/ingress.md, "System events"). */
export type AnnouncedRunStatus = 'failed' | 'cancelled';

/** Prefixes of the system events' ids: `run-failed:{run_id}`, `run-cancelled:{run_id}`. */
export const RUN_OUTCOME_EVENT_ID_PREFIXES: Readonly<Record<AnnouncedRunStatus, string>> = {
  failed: 'run-failed:',
  cancelled: 'run-cancelled:',
};

/**
 * `run-failed:{run_id}` / `run-cancelled:{run_id}` — the id of the system
 * event (`activity_core.run.failed` / `.cancelled`) that announces a run's
 * end. One per run and outcome: a retried status write, a replayed or reset
 * run emits the same id, which the events table answers `duplicate`.
 */
export function runOutcomeEventId(runId: string, status: AnnouncedRunStatus): string {
  if (!UUID_RE.test(runId)) throw new Error(`run_id must be a lowercase UUID, got ${runId}`);
  return `${RUN_OUTCOME_EVENT_ID_PREFIXES[status]}${runId}`;
}

/** True for the id of a run-outcome system event (`run-failed:…`, `run-cancelled:…`). */
export function isRunOutcomeEventId(eventId: string): boolean {
  return Object.values(RUN_OUTCOME_EVENT_ID_PREFIXES).some((prefix) => eventId.startsWith(prefix));
}

/** The prefix of every event id the ingress assigns. */
export const ASSIGNED_EVENT_ID_PREFIX = 'evt_';

/**
 * `evt_{uuid}` — the id the ingress assigns to an event that arrives without
 * one (no `event_id` in the body, no Idempotency-Key, no delivery id in a
 * webhook). The one id here that is random, not derived: the default draws a
 * fresh UUIDv4, so workflow code (which imports this module) must never call
 * it; pass `uuid` to rebuild a known id.
 */
export function assignedEventId(uuid: string = globalThis.crypto.randomUUID()): string {
  if (!UUID_RE.test(uuid)) throw new Error(`assigned event ids are built from a lowercase UUID, got ${uuid}`);
  return `${ASSIGNED_EVENT_ID_PREFIX}${uuid}`;
}

/**
 * Event ids that would collide with ids the system makes itself: one shaped
 * like a `scheduled_for` time would give the same workflow id as that cron
 * fire of the activity, `emit-` ids belong to `emit_event` tasks, `wh:` ids
 * to webhook deliveries, `run-failed:`/`run-cancelled:` ids to the
 * system events of runs and `batch:` ids to the runs of batches. Returns why the id is refused, or undefined when it is fine.
 */
export function reservedEventIdReason(eventId: string): string | undefined {
  if (SCHEDULED_FOR_RE.test(eventId))
    return 'event ids shaped like a cron fire time (YYYY-MM-DDTHH:MM:SS+00:00) are reserved for scheduled runs';
  if (eventId.startsWith('emit-'))
    return 'event ids starting with "emit-" are reserved for events emitted by emit_event tasks';
  if (eventId.startsWith(WEBHOOK_EVENT_ID_PREFIX))
    return `event ids starting with "${WEBHOOK_EVENT_ID_PREFIX}" are reserved for webhook deliveries`;
  if (eventId.startsWith(SOURCE_SCOPED_EVENT_ID_PREFIX))
    return `event ids starting with "${SOURCE_SCOPED_EVENT_ID_PREFIX}" are reserved for the events of source-scoped ingest keys, which get them from the service`;
  if (eventId.startsWith(BATCH_RUN_ID_PREFIX))
    return `event ids starting with "${BATCH_RUN_ID_PREFIX}" are reserved: activity-{activity_id}:batch:{window_id} names the run of a batch`;
  if (isRunOutcomeEventId(eventId))
    return 'event ids starting with "run-failed:" or "run-cancelled:" are reserved for the system events that announce a run\'s end';
  return undefined;
}

/** The prefix of every event id a webhook delivery gets; refused on `POST /v1/events`. */
export const WEBHOOK_EVENT_ID_PREFIX = 'wh:';

/** Longest event id (the EventId schema's limit). */
const MAX_EVENT_ID_LENGTH = 200;

/**
 * `wh:{source}:{delivery id}` — the event id of a webhook delivery. Event ids
 * are one key space shared with `POST /v1/events`, which refuses the `wh:`
 * prefix, so no ingest key can claim an id a webhook sender will use later,
 * and two sources sending the same delivery id are two events. Source names
 * contain no `:`, so the id reads back unambiguously.
 *
 * A delivery id too long to fit in 200 characters with the prefix becomes
 * `wh:{source}:~{SHA-256 hex of the delivery id}`: still deterministic, so
 * redeliveries keep matching.
 */
export function webhookEventId(source: string, deliveryId: string): string {
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(source)) throw new Error(`webhook source name is not a slug: ${source}`);
  if (deliveryId.length === 0) throw new Error('delivery id must not be empty');
  const prefix = `${WEBHOOK_EVENT_ID_PREFIX}${source}:`;
  if (prefix.length + deliveryId.length <= MAX_EVENT_ID_LENGTH) return `${prefix}${deliveryId}`;
  let hex = '';
  for (const byte of sha256(new TextEncoder().encode(deliveryId))) hex += byte.toString(16).padStart(2, '0');
  return `${prefix}~${hex}`;
}

/**
 * What follows `wh:{source}:` in a webhook event id of this source — the
 * delivery id, or `~{SHA-256 hex}` for one too long to fit — or undefined
 * when the id is not one of this source's.
 */
export function webhookDeliveryIdOf(source: string, eventId: string): string | undefined {
  const prefix = `${WEBHOOK_EVENT_ID_PREFIX}${source}:`;
  if (!eventId.startsWith(prefix) || eventId.length === prefix.length) return undefined;
  return eventId.slice(prefix.length);
}

/** The prefix of the stored id of every event a source-scoped ingest key posts; refused on `POST /v1/events`. */
export const SOURCE_SCOPED_EVENT_ID_PREFIX = 'src:';

/**
 * `src:{source, percent-encoded}:{event id}` — the stored id of an event that
 * an ingest key limited to some sources (`INGEST_KEY_SCOPES` `sources`)
 * posted with event id `eventId`. CloudEvents makes `source` and `id` the
 * unique pair; for these producers the service keeps it so: their ids live in
 * one space per source, no other producer can post into it (the prefix is
 * reserved), and they cannot post into anyone else's. So a producer cannot
 * take the id another producer will use later, nor probe which ids are in use
 * outside its own sources. The source is percent-encoded
 * (encodeURIComponent), which leaves no `:` in it, so the pair reads back
 * unambiguously and two pairs never share an id.
 *
 * A pair too long to fit in 200 characters (or a source with a lone surrogate) becomes
 * `src:~{SHA-256 hex of the JSON array [source, eventId]}`: still
 * deterministic, so a retry is still a duplicate.
 */
export function sourceScopedEventId(source: string, eventId: string): string {
  if (source.length === 0 || eventId.length === 0) throw new Error('source and event id must not be empty');
  let encoded: string | undefined;
  try {
    encoded = encodeURIComponent(source);
  } catch {
    // A lone surrogate has no UTF-8 form to percent-encode: the digest (of its escaped JSON) names it.
  }
  const id = `${SOURCE_SCOPED_EVENT_ID_PREFIX}${encoded}:${eventId}`;
  if (encoded !== undefined && id.length <= MAX_EVENT_ID_LENGTH) return id;
  let hex = '';
  for (const byte of sha256(new TextEncoder().encode(JSON.stringify([source, eventId]))))
    hex += byte.toString(16).padStart(2, '0');
  return `${SOURCE_SCOPED_EVENT_ID_PREFIX}~${hex}`;
}

/**
 * The event id of item `index` of a batch sent without an event_id under
 * `Idempotency-Key: key` (`{key}#{index}`): resending the same batch with the
 * same key names the same events, so a retry after an error cannot double one.
 */
export function batchItemEventId(idempotencyKey: string, index: number): string {
  return `${idempotencyKey}#${index}`;
}

/** Longest Idempotency-Key a batch takes: derived item ids (`{key}#{index}`) must stay within the 200-character event id. */
export const MAX_BATCH_IDEMPOTENCY_KEY = 200 - `#${99_999}`.length;

/**
 * The `X-Activity-Attempt-Id` of one attempt of an `http` task
 * (`<task workflow id>#<attempt>`): distinct per attempt, while the
 * Idempotency-Key stays the same across all of them.
 */
export function httpTaskAttemptId(taskWorkflowIdValue: string, attempt: number): string {
  return `${taskWorkflowIdValue}#${attempt}`;
}

/**
 * `rerun-{original run_id}:{attempt}` — the workflow id of re-run number
 * `attempt` (1, 2, …) of a run. The original is always the first run of a
 * trigger (a re-run of a re-run counts against the same original), so the id
 * names what it runs again, and the original keeps its own id and
 * REJECT_DUPLICATE. The attempt number is allocated in Postgres
 * (`run_reruns`, unique per original), so two requests never share one.
 * The re-run's run id is {@link runIdFor} of this id, like every run's.
 */
export function rerunWorkflowId(originalRunId: string, attempt: number): string {
  if (!UUID_RE.test(originalRunId)) throw new Error(`run_id must be a lowercase UUID, got ${originalRunId}`);
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new Error(`re-run attempt must be a positive integer, got ${attempt}`);
  return `rerun-${originalRunId}:${attempt}`;
}

/**
 * The id of a bulk re-run: UUIDv5 of `bulk-rerun:{Idempotency-Key}` when the
 * request had one (the same request again is the same bulk re-run), else a
 * fresh UUIDv4 — random, so workflow code must never call it without a key.
 */
export function bulkRerunId(idempotencyKey?: string): string {
  if (idempotencyKey === undefined) return globalThis.crypto.randomUUID();
  if (idempotencyKey.length === 0) throw new Error('Idempotency-Key must not be empty');
  return uuidv5(`bulk-rerun:${idempotencyKey}`);
}

/**
 * The key under which a bulk re-run allocates the re-run of one original
 * (`bulk:{bulk id}`): a bulk re-run that is resumed after a crash finds the
 * re-runs it already allocated and starts none of them twice.
 */
export function bulkRerunKey(bulkId: string): string {
  if (!UUID_RE.test(bulkId)) throw new Error(`bulk re-run id must be a lowercase UUID, got ${bulkId}`);
  return `bulk:${bulkId}`;
}

/**
 * `replay-{run_id}:{attempt}` — a forced replay (`mode: force`) of an event
 * for one activity: `run_id` is the event's own run of that activity (the
 * run id of `activity-{activity_id}:{event_id}`, whether or not it ever ran),
 * so the id names what it replays and needs no encoding of the event id.
 * The attempt is allocated in Postgres (`event_replays`, unique per
 * original run), so two requests never share one.
 */
export function replayWorkflowId(originalRunId: string, attempt: number): string {
  if (!UUID_RE.test(originalRunId)) throw new Error(`run_id must be a lowercase UUID, got ${originalRunId}`);
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new Error(`replay attempt must be a positive integer, got ${attempt}`);
  return `replay-${originalRunId}:${attempt}`;
}

/**
 * The id of a bulk replay: UUIDv5 of `bulk-replay:{key}`, where the key is
 * the request's Idempotency-Key or, without one, the canonical JSON of the
 * request's filter and mode — the same request twice is the same bulk
 * replay and starts nothing new.
 */
export function bulkReplayId(key: string): string {
  if (key.length === 0) throw new Error('bulk replay key must not be empty');
  return uuidv5(`bulk-replay:${key}`);
}

/** The request key under which a bulk replay forces the replay of one event (`bulk-replay:{bulk id}`). */
export function bulkReplayKey(bulkId: string): string {
  if (!UUID_RE.test(bulkId)) throw new Error(`bulk replay id must be a lowercase UUID, got ${bulkId}`);
  return `bulk-replay:${bulkId}`;
}

/**
 * Who made a change or took an action, as definitions' `changed_by` and the
 * audit log's `actor` name it: `api_key:<key id>` or `ingest_key:<key id>`
 * (12 hex digits of the key's SHA-256), or `anonymous` while authentication
 * is off.
 */
export const CREDENTIAL_LABEL = /^(?:(?:api_key|ingest_key):[0-9a-f]{12}|anonymous)$/;

/** The credential an event or a change is recorded with, before it becomes a label. */
export type Credential =
  | { kind: 'api_key' | 'ingest_key'; id: string }
  | { kind: 'webhook'; source: string }
  | { kind: 'emit' | 'system'; runId: string }
  | { kind: 'anonymous' };

/** The label of an anonymous credential: what is recorded while authentication is off. */
export const ANONYMOUS_CREDENTIAL = 'anonymous';

/**
 * A credential's label, the one form recorded in `events.credential`,
 * definitions' `changed_by` and the audit log's `actor`: `api_key:<key id>`,
 * `ingest_key:<key id>` (12 hex digits of the key's SHA-256, never the key),
 * `webhook:<source>` (a webhook delivery), `emit:<run id>` (an `emit_event`
 * task of that run), `system:<run id>` (the run-outcome system event of that
 * run) or `anonymous`.
 */
export function formatCredentialLabel(credential: Credential): string {
  switch (credential.kind) {
    case 'api_key':
    case 'ingest_key':
      return `${credential.kind}:${credential.id}`;
    case 'webhook':
      return `webhook:${credential.source}`;
    case 'emit':
    case 'system':
      return `${credential.kind}:${credential.runId}`;
    case 'anonymous':
      return ANONYMOUS_CREDENTIAL;
  }
}

/**
 * The credential a label names (the inverse of `formatCredentialLabel`), or
 * undefined for a string that is no credential label. A webhook source may
 * itself contain `:`; everything after the first `:` is the source.
 */
export function parseCredentialLabel(label: string): Credential | undefined {
  if (label === ANONYMOUS_CREDENTIAL) return { kind: 'anonymous' };
  const colon = label.indexOf(':');
  if (colon <= 0 || colon === label.length - 1) return undefined;
  const kind = label.slice(0, colon);
  const rest = label.slice(colon + 1);
  switch (kind) {
    case 'api_key':
    case 'ingest_key':
      return { kind, id: rest };
    case 'webhook':
      return { kind, source: rest };
    case 'emit':
    case 'system':
      return { kind, runId: rest };
    default:
      return undefined;
  }
}
