import {
  DomainError,
  formatScheduledFor,
  isRunOutcomeEventId,
  RUN_OUTCOME_EVENT_TYPES,
  runOutcomeEventId,
  SYSTEM_EVENT_SOURCE,
  systemEventCredential,
  type EventEnvelope,
  type Logger,
  type RunOutcomeEventData,
} from '@activity-core/contracts';
import type { RunOutcomeRecord, RunOutcomesRepository } from '@activity-core/db';
import { DEFAULT_EMIT_MAX_HOPS } from './task-control';

/**
 * Hands a system event to the ingress (the worker's ingest, id origin
 * `system`); the router decides which runs follow, exactly as for posted
 * events.
 */
export type EmitSystemEvent = (
  envelope: EventEnvelope,
  origin: { credential: string; hops: number },
) => Promise<{ status: string; runs: Array<{ workflow_id: string; status: string }> }>;

/** Why no system event was emitted for a run's end. */
export type RunOutcomeSkipReason =
  /** The run has no row, or its status is not one that is announced (succeeded, running). */
  | 'not_announced'
  /** The run was triggered by a run-outcome system event: its own end is never announced (no cascade). */
  | 'triggered_by_system_event'
  /** The event would be more than EMIT_MAX_HOPS steps from an external event. */
  | 'hops_exceeded'
  /** The ingress refused it for good (e.g. the id was taken by different content after a reset). */
  | 'refused';

export type RunOutcomeAnnouncement =
  | { emitted: true; event_id: string; status: string; hops: number }
  | { emitted: false; reason: RunOutcomeSkipReason; event_id?: string; detail?: string };

/** Longest error message a system event carries (the run's records keep the whole message). */
export const SYSTEM_EVENT_MESSAGE_MAX = 2_000;

const clip = (value: unknown): string => {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text.length <= SYSTEM_EVENT_MESSAGE_MAX ? text : `${text.slice(0, SYSTEM_EVENT_MESSAGE_MAX - 1)}…`;
};
const typeOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const errorOf = (error: { message?: unknown; type?: unknown } | null) =>
  error === null ? null : { message: clip(error.message ?? ''), type: typeOf(error.type) };

/**
 * The system event that announces a run's end, or why there is none. Pure:
 * everything comes from the run's records, so a retry builds the same event
 * (same id, same fingerprint) and the events table answers it `duplicate`.
 *
 * Loop safety: a run triggered by a run-outcome event (`run-failed:…`,
 * `run-cancelled:…` — ids no client can post) never announces its own end,
 * so an alerting activity that fails does not set off another alert. Hops
 * bound everything else: the event counts one hop more than the event that
 * triggered the run, and past `maxHops` nothing is emitted.
 */
export function runOutcomeEvent(
  record: RunOutcomeRecord | undefined,
  maxHops: number = DEFAULT_EMIT_MAX_HOPS,
):
  | { envelope: EventEnvelope & { data: RunOutcomeEventData }; hops: number }
  | { skipped: RunOutcomeSkipReason; event_id?: string; detail?: string } {
  if (
    record === undefined ||
    (record.status !== 'failed' && record.status !== 'cancelled') ||
    record.finishedAt === null
  )
    return { skipped: 'not_announced' };
  const status = record.status;
  const eventId = runOutcomeEventId(record.runId, status);
  if (record.triggerType === 'event' && record.eventId !== null && isRunOutcomeEventId(record.eventId)) {
    return {
      skipped: 'triggered_by_system_event',
      event_id: eventId,
      detail: `the run was triggered by the system event ${record.eventId}`,
    };
  }
  const hops = (record.triggerHops ?? 0) + 1;
  if (hops > maxHops) {
    return {
      skipped: 'hops_exceeded',
      event_id: eventId,
      detail: `the event would be ${hops} steps from an external event; EMIT_MAX_HOPS is ${maxHops}`,
    };
  }
  const data: RunOutcomeEventData = {
    run_id: record.runId,
    workflow_id: record.workflowId,
    status,
    activity_id: record.activityId,
    activity_name: record.activityName,
    activity_version: record.activityVersion,
    trigger_type: record.triggerType as RunOutcomeEventData['trigger_type'],
    trigger_event_id: record.triggerType === 'event' ? record.eventId : null,
    scheduled_for: record.scheduledFor === null ? null : formatScheduledFor(new Date(record.scheduledFor)),
    error: errorOf(record.error),
    failed_task:
      status === 'failed' && record.failedTask !== null
        ? {
            index: record.failedTask.index,
            type: record.failedTask.type,
            workflow_id: record.failedTask.workflowId,
            error: errorOf(record.failedTask.error),
          }
        : null,
    started_at: record.startedAt,
    finished_at: record.finishedAt,
    duration_seconds: Math.max(0, record.durationSeconds ?? 0),
  };
  return {
    envelope: {
      event_id: eventId,
      event_type: RUN_OUTCOME_EVENT_TYPES[status],
      source: SYSTEM_EVENT_SOURCE,
      subject: record.runId,
      occurred_at: record.finishedAt,
      data,
    },
    hops,
  };
}

/**
 * Announces runs that ended `failed` or `cancelled` with a system event, after
 * their status is recorded. Idempotent: call it as often as the status write
 * is repeated. Throws only when the store is unreachable (the caller's retry
 * emits it later, under the same id); a refusal that a retry cannot change is
 * logged and answered `emitted: false`, so bookkeeping never fails for good.
 */
export function createRunOutcomeAnnouncer(deps: {
  outcomes: Pick<RunOutcomesRepository, 'readRunOutcome'>;
  emit: EmitSystemEvent;
  maxHops?: number;
  logger?: Pick<Logger, 'info' | 'warn'>;
}) {
  return {
    async announce(runId: string): Promise<RunOutcomeAnnouncement> {
      const built = runOutcomeEvent(await deps.outcomes.readRunOutcome(runId), deps.maxHops ?? DEFAULT_EMIT_MAX_HOPS);
      if ('skipped' in built) {
        if (built.skipped !== 'not_announced')
          deps.logger?.info(
            { runId, eventId: built.event_id, reason: built.skipped, detail: built.detail },
            'run outcome not announced',
          );
        return {
          emitted: false,
          reason: built.skipped,
          ...(built.event_id === undefined ? {} : { event_id: built.event_id }),
          ...(built.detail === undefined ? {} : { detail: built.detail }),
        };
      }
      try {
        const outcome = await deps.emit(built.envelope, { credential: systemEventCredential(runId), hops: built.hops });
        return { emitted: true, event_id: built.envelope.event_id, status: outcome.status, hops: built.hops };
      } catch (error) {
        // Unreachable store: the caller retries. Anything else would be refused again.
        if (error instanceof DomainError && error.code !== 'unavailable') {
          deps.logger?.warn(
            { err: error, runId, eventId: built.envelope.event_id },
            'run outcome system event refused by the ingress; not retried',
          );
          return { emitted: false, reason: 'refused', event_id: built.envelope.event_id, detail: error.message };
        }
        throw error;
      }
    },
  };
}

export type RunOutcomeAnnouncer = ReturnType<typeof createRunOutcomeAnnouncer>;
