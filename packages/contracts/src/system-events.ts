import { z } from 'zod';
import { formatCredentialLabel } from './ids';

/**
 * System events: events the service itself emits through the ordinary ingest,
 * so any activity can react to them (docs/ingress.md, "System events";
 * ADR 0038). Their source is reserved: no client can post them.
 */

/** The source every system event carries; `POST /v1/events` refuses it. */
export const SYSTEM_EVENT_SOURCE = 'activity-core';

/**
 * Event types in this namespace are the service's own: an `emit_event` task
 * may not emit one (refused at registration), so a trigger on
 * `activity_core.run.failed` with source `activity-core` sees only the
 * service's announcements.
 */
export const SYSTEM_EVENT_TYPE_PREFIX = 'activity_core.';

/** Event types of the system events that announce a run's end, by terminal status. */
export const RUN_OUTCOME_EVENT_TYPES = {
  failed: 'activity_core.run.failed',
  cancelled: 'activity_core.run.cancelled',
} as const;

/** The credential recorded with a run-outcome system event: `system:<run id>` (the run it reports on). */
export function systemEventCredential(runId: string): string {
  return formatCredentialLabel({ kind: 'system', runId });
}

const Timestamp = z
  .string()
  .meta({ description: 'RFC 3339 date-time in UTC with milliseconds, e.g. `2026-03-01T09:00:04.512Z`.' });

/** The task whose failure ended the run. */
export const RunOutcomeFailedTask = z
  .object({
    index: z.number().int().min(0).meta({ description: "The task's 0-based position in the definition." }),
    type: z.string().meta({ description: '`http`, `delay`, `emit_event` or `noop`.' }),
    workflow_id: z.string().meta({ description: 'The task workflow id, `task-{run_id}:{task_type}:{index}`.' }),
    error: z.object({ message: z.string(), type: z.string().nullable() }).nullable().meta({
      description:
        "The task's recorded error (`type` e.g. `http_status_503`, `http_timeout`); null if the task recorded none.",
    }),
  })
  .meta({ id: 'RunOutcomeFailedTask', description: 'The task whose failure ended the run.' });
export type RunOutcomeFailedTask = z.infer<typeof RunOutcomeFailedTask>;

/**
 * `data` of an `activity_core.run.failed` or `activity_core.run.cancelled`
 * event. Built from the run's Postgres records after its terminal status was
 * written, so every delivery of the same event carries the same data.
 */
export const RunOutcomeEventData = z
  .object({
    run_id: z.string().meta({ description: 'The run (`GET /v1/runs/{run_id}`).' }),
    workflow_id: z.string().meta({ description: 'The run workflow id in Temporal.' }),
    status: z.enum(['failed', 'cancelled']),
    activity_id: z.string(),
    activity_name: z.string().meta({ description: 'The name of the activity at the version that ran.' }),
    activity_version: z.number().int().min(1),
    trigger_type: z.enum(['event', 'cron', 'manual', 'backfill', 'call']),
    trigger_event_id: z
      .string()
      .nullable()
      .meta({ description: 'For event runs, the triggering event id; null otherwise.' }),
    scheduled_for: z.string().nullable().meta({
      description: 'For cron and backfill runs, the nominal fire time (`YYYY-MM-DDTHH:MM:SS+00:00`); null otherwise.',
    }),
    error: z.object({ message: z.string(), type: z.string().nullable() }).nullable().meta({
      description:
        "The run's recorded error: for a failed task `task {index} ({type}) failed: …`; `type` is set for outcomes recorded by the run reconciler (`terminated`, `timed_out`, …). Null for a cancellation the run recorded itself.",
    }),
    failed_task: RunOutcomeFailedTask.nullable().meta({
      description: 'The task whose failure ended the run; null when no task failed (cancelled, terminated, timed out).',
    }),
    started_at: Timestamp,
    finished_at: Timestamp,
    duration_seconds: z.number().min(0).meta({ description: '`finished_at - started_at`, in seconds.' }),
  })
  .strict()
  .meta({
    id: 'RunOutcomeEventData',
    title: 'Run outcome system event data',
    description:
      'The `data` of the system events `activity_core.run.failed` and `activity_core.run.cancelled` (source `activity-core`, id `run-failed:{run_id}` / ' +
      '`run-cancelled:{run_id}`), emitted once per run and outcome through the ordinary ingest. Trigger an activity on them to alert on failures.',
  });
export type RunOutcomeEventData = z.infer<typeof RunOutcomeEventData>;
