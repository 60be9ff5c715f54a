/**
 * Deterministic identifiers (SPEC §2). Interoperability depends on these exact
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

/**
 * Formats an instant like Python's `datetime.isoformat()` for an aware UTC
 * datetime with whole seconds: `YYYY-MM-DDTHH:MM:SS+00:00`. Sub-second parts
 * are truncated (a nominal fire time never has them; truncating keeps an id
 * stable if one slips in from a clock).
 */
export function formatScheduledFor(instant: Date): string {
  const ms = instant.getTime();
  if (Number.isNaN(ms)) throw new Error('scheduled_for is not a valid date');
  const whole = new Date(Math.floor(ms / 1000) * 1000);
  return `${whole.toISOString().slice(0, 19)}+00:00`;
}

const SCHEDULED_FOR_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

/** Parses the canonical `scheduled_for` form back into a Date; throws on anything else. */
export function parseScheduledFor(value: string): Date {
  if (!SCHEDULED_FOR_RE.test(value)) {
    throw new Error(`scheduled_for must look like 2026-03-01T09:00:00+00:00, got ${value}`);
  }
  const date = new Date(value);
  if (Number.isNaN(date.getTime()) || formatScheduledFor(date) !== value) {
    throw new Error(`scheduled_for is not a real instant: ${value}`);
  }
  return date;
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

/** `task-{run_id}:{task_type}:{index}` — one task of one run. */
export function taskWorkflowId(runId: string, taskType: string, index: number): string {
  if (!UUID_RE.test(runId)) throw new Error(`run_id must be a lowercase UUID, got ${runId}`);
  if (!Number.isInteger(index) || index < 0) throw new Error(`task index must be a non-negative integer, got ${index}`);
  return `task-${runId}:${taskType}:${index}`;
}

/**
 * The run id: UUIDv5 of the run workflow id. Derived from the workflow id,
 * never from Temporal's run id, so it survives replay, worker restart,
 * workflow retry and reset (seed 003).
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
 * task index, so a retried or replayed task emits the same event and the
 * chain it starts never duplicates.
 */
export function emittedEventId(runId: string, index: number): string {
  return `emit-${runId}:${index}`;
}

/**
 * Event ids that would collide with ids the system makes itself: one shaped
 * like a `scheduled_for` time would give the same workflow id as that cron
 * fire of the activity, and `emit-` ids belong to `emit_event` tasks.
 * Returns why the id is refused, or undefined when it is fine.
 */
export function reservedEventIdReason(eventId: string): string | undefined {
  if (SCHEDULED_FOR_RE.test(eventId)) return 'event ids shaped like a cron fire time (YYYY-MM-DDTHH:MM:SS+00:00) are reserved for scheduled runs';
  if (eventId.startsWith('emit-')) return 'event ids starting with "emit-" are reserved for events emitted by emit_event tasks';
  if (eventId.startsWith(WEBHOOK_EVENT_ID_PREFIX)) return `event ids starting with "${WEBHOOK_EVENT_ID_PREFIX}" are reserved for webhook deliveries`;
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
