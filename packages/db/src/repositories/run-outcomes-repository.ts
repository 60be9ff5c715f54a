import { sql } from 'drizzle-orm';
import type { Db } from '../client';

/**
 * What a run-outcome system event reports, read from a run's records after its
 * terminal status was written: the run row, the activity's name at the version
 * that ran, the task whose failure ended it, and the hop count of the event
 * that triggered it. Every field comes from rows that no longer change once
 * the status is terminal, so a repeated read gives the same answer.
 */
export interface RunOutcomeRecord {
  runId: string;
  workflowId: string;
  status: string;
  activityId: string;
  activityVersion: number;
  /** The name at that version (the live name if the version row is missing). */
  activityName: string;
  triggerType: string;
  eventId: string | null;
  /** ISO 8601 (UTC, milliseconds). */
  scheduledFor: string | null;
  error: { message?: unknown; type?: unknown; task_index?: unknown } | null;
  startedAt: string;
  /** Null only while the run is still running. */
  finishedAt: string | null;
  durationSeconds: number | null;
  failedTask: {
    index: number;
    type: string;
    workflowId: string;
    error: { message?: unknown; type?: unknown } | null;
  } | null;
  /** Hops of the triggering event (null when the run had no event, or the event was purged). */
  triggerHops: number | null;
}

interface Row extends Record<string, unknown> {
  run_id: string;
  workflow_id: string;
  status: string;
  activity_id: string;
  activity_version: number;
  activity_name: string | null;
  trigger_type: string;
  event_id: string | null;
  scheduled_for: string | null;
  error: RunOutcomeRecord['error'];
  started_at: string;
  finished_at: string | null;
  duration_seconds: number | null;
  task_index: number | null;
  task_type: string | null;
  task_workflow_id: string | null;
  task_error: { message?: unknown; type?: unknown } | null;
  trigger_hops: number | null;
}

const iso = (column: ReturnType<typeof sql>) =>
  sql`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export function createRunOutcomesRepository(db: Db) {
  return {
    /** One statement; undefined when the run has no row. */
    async readRunOutcome(runId: string): Promise<RunOutcomeRecord | undefined> {
      const result = await db.execute<Row>(sql`
        SELECT r.run_id, r.workflow_id, r.status, r.activity_id, r.activity_version, r.trigger_type, r.event_id, r.error,
               coalesce(v.name, d.name) AS activity_name,
               ${iso(sql`r.scheduled_for`)} AS scheduled_for,
               ${iso(sql`r.started_at`)} AS started_at,
               ${iso(sql`r.finished_at`)} AS finished_at,
               extract(epoch FROM r.finished_at - r.started_at)::float8 AS duration_seconds,
               t.task_index, t.task_type, t.workflow_id AS task_workflow_id, t.error AS task_error,
               e.hops AS trigger_hops
          FROM activity_runs r
          LEFT JOIN activity_definition_versions v ON v.activity_id = r.activity_id AND v.version = r.activity_version
          LEFT JOIN activity_definitions d ON d.id = r.activity_id
          LEFT JOIN task_instances t
                 ON t.run_id = r.run_id
                AND jsonb_typeof(r.error -> 'task_index') = 'number'
                AND t.task_index = (r.error ->> 'task_index')::int
          LEFT JOIN events e ON r.trigger_type = 'event' AND e.event_id = r.event_id
         WHERE r.run_id = ${runId}
      `);
      const row = result.rows[0];
      if (row === undefined) return undefined;
      return {
        runId: row.run_id,
        workflowId: row.workflow_id,
        status: row.status,
        activityId: row.activity_id,
        activityVersion: row.activity_version,
        activityName: row.activity_name ?? row.activity_id,
        triggerType: row.trigger_type,
        eventId: row.event_id,
        scheduledFor: row.scheduled_for,
        error: row.error,
        startedAt: row.started_at,
        finishedAt: row.finished_at,
        durationSeconds: row.duration_seconds,
        failedTask:
          row.task_index === null || row.task_type === null || row.task_workflow_id === null
            ? null
            : { index: row.task_index, type: row.task_type, workflowId: row.task_workflow_id, error: row.task_error },
        triggerHops: row.trigger_hops,
      };
    },
  };
}

export type RunOutcomesRepository = ReturnType<typeof createRunOutcomesRepository>;
