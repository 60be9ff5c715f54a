import { z } from 'zod';
import { Rfc3339DateTime } from './date-time';
import { CREDENTIAL_LABEL } from './ids';
import { pageCursor } from './page-cursor';

/**
 * Every change and operator action the audit log records, named
 * `<what it acts on>.<verb>`. Reads, event ingest and the codec are not
 * recorded (they change nothing an operator steers).
 */
export const AUDIT_ACTIONS = [
  'activity.create',
  'activity.update',
  'activity.delete',
  'activity.enable',
  'activity.disable',
  'activity.held_release',
  'activity.held_discard',
  'schedules.pause',
  'schedules.resume',
  'schedules.trigger',
  'schedules.backfill',
  'schedules.reconcile',
  'run.rerun',
  'run.cancel',
  'runs.bulk_rerun',
  'event.replay',
  'events.bulk_replay',
  'dead_letters.retry',
  'dead_letters.discard',
  'webhook_source.create',
  'webhook_source.update',
  'webhook_source.delete',
] as const;
export const AuditAction = z.enum(AUDIT_ACTIONS);
export type AuditAction = z.infer<typeof AuditAction>;

/** What an audited request acted on: `target_id` is an activity id, run id, bulk re-run id or webhook source name. */
export const AuditTargetType = z.enum(['activity', 'run', 'bulk_rerun', 'webhook_source', 'installation']);
export type AuditTargetType = z.infer<typeof AuditTargetType>;

/** `succeeded`: answered 2xx; `refused`: 4xx (a 403 is a key outside its role or activities); `failed`: 5xx. */
export const AuditOutcome = z.enum(['succeeded', 'refused', 'failed']);
export type AuditOutcome = z.infer<typeof AuditOutcome>;

/** Longest request id the log keeps (a client may send its own in `x-request-id`). */
export const MAX_AUDIT_REQUEST_ID = 200;

/** One record of the audit log: who did what to which target, when, with which answer. Never a secret or a payload. */
export const AuditEntry = z
  .object({
    id: z.uuid(),
    at: z.string().meta({ format: 'date-time' }),
    actor: z.string().meta({ description: '`api_key:<key id>`, or `anonymous` while authentication is off.' }),
    action: AuditAction,
    target_type: AuditTargetType,
    target_id: z.string().nullable(),
    /** The activity acted on (for runs, the run's activity); null for installation-wide actions. */
    activity_id: z.uuid().nullable(),
    outcome: AuditOutcome,
    status: z.number().int(),
    request_id: z.string(),
  })
  .meta({ id: 'AuditEntry' });
export type AuditEntry = z.infer<typeof AuditEntry>;

/** An actor filter: exactly a credential label. */
export const AuditActor = z
  .string()
  .max(64)
  .regex(CREDENTIAL_LABEL, 'must be api_key:<12 hex digits>, ingest_key:<12 hex digits> or anonymous');

/** The filters and page of GET /v1/audit: bounded, each naming its field when refused. */
export const AuditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: pageCursor(100),
  actor: AuditActor.optional().meta({ description: 'Only entries of this credential, e.g. `api_key:3f9a0c1b2d4e`.' }),
  action: AuditAction.optional(),
  activity_id: z
    .uuid({ message: 'must be a UUID' })
    .transform((id) => id.toLowerCase())
    .optional()
    .meta({ description: 'Only entries about this activity (its definition, schedules and runs).' }),
  target_type: AuditTargetType.optional(),
  target_id: z.string().min(1).max(200).optional().meta({ description: 'Only entries about this target id or name.' }),
  from: Rfc3339DateTime.optional().meta({ description: 'Only entries at or after this instant.' }),
  to: Rfc3339DateTime.optional().meta({ description: 'Only entries at or before this instant.' }),
});
export type AuditQuery = z.input<typeof AuditQuery>;
