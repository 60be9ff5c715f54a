import { z } from 'zod';
import { Rfc3339DateTime } from './date-time';
import { RunStatus, TriggerType } from './api';
import { PriorityOverride } from './activity-definition';

const Timestamp = z.string().meta({ format: 'date-time' });

/** Where a re-run begins: the first task, or the task that failed the run (earlier tasks' recorded results are reused). */
export const RerunFrom = z.enum(['start', 'failed_task']);
export type RerunFrom = z.infer<typeof RerunFrom>;

/** Longest time range a bulk re-run may select (by the originals' `created_at`). */
export const MAX_BULK_RERUN_RANGE_DAYS = 31;
/** Most originals one bulk re-run may select; a larger selection is refused (narrow the filter or split the range). */
export const MAX_BULK_RERUN_RUNS = 5000;

export const RerunRequest = z
  .object({
    /** `start` (default): every task again. `failed_task`: from the task that failed the run; the tasks before it are not executed again. */
    from: RerunFrom.default('start'),
    /** The re-run's Temporal priority (1–5); default one lower than the definition's. Kept under the Idempotency-Key: a repeated request starts it with the first request's. */
    priority: PriorityOverride.optional(),
  })
  .strict()
  .meta({ id: 'RerunRequest' });
export type RerunRequest = z.infer<typeof RerunRequest>;

export const RerunResponse = z
  .object({
    /** The re-run's own run id (UUIDv5 of its workflow id). */
    run_id: z.uuid(),
    /** `rerun-{original run_id}:{attempt}`. */
    workflow_id: z.string(),
    /** The original run: the first run of the trigger. */
    rerun_of: z.uuid(),
    /** 1 for the first re-run of the original, 2 for the next, … */
    attempt: z.number().int(),
    /** The run whose definition version, trigger and (for `failed_task`) task results the re-run reuses. */
    source_run_id: z.uuid(),
    from: RerunFrom,
    /** Index of the first task the re-run executes (0 for `start`). */
    from_task_index: z.number().int(),
    /** The Idempotency-Key the re-run is recorded under (generated when the request had none). */
    key: z.string(),
    key_generated: z.boolean(),
    /** `duplicate`: this key already named this re-run; nothing new started. */
    status: z.enum(['started', 'duplicate']),
  })
  .meta({ id: 'RerunResponse' });
export type RerunResponse = z.infer<typeof RerunResponse>;

/** One entry of a run's re-run chain (GET /v1/runs/{run_id}). */
export const RerunLink = z.object({
  run_id: z.uuid(),
  workflow_id: z.string(),
  attempt: z.number().int(),
  source_run_id: z.uuid(),
  from_task_index: z.number().int(),
  /** The re-run's recorded status; `pending` until its workflow has recorded its start. */
  status: z.enum([...RunStatus.options, 'pending']),
  /** The bulk re-run that requested it, if any. */
  bulk_rerun_id: z.uuid().nullable(),
  requested_at: Timestamp,
});
export type RerunLink = z.infer<typeof RerunLink>;

/** Which originals a bulk re-run selects; re-runs themselves are never selected. */
export const BulkRerunFilter = z
  .object({
    activity_id: z
      .uuid()
      .transform((id) => id.toLowerCase())
      .optional(),
    /** The originals' recorded status. Default `failed`; only statuses of runs that have ended (a run in progress cannot be re-run). */
    status: RunStatus.exclude(['running', 'waiting_for_slot']).default('failed'),
    trigger_type: TriggerType.optional(),
    /** Originals created at or after this instant (inclusive). */
    from: Rfc3339DateTime,
    /** Originals created before this instant (exclusive); at most 31 days after `from`. */
    to: Rfc3339DateTime.meta({
      description: `Originals created before this instant (exclusive): after \`from\` (a \`to\` in the future counts as now, so \`from\` must be in the past) and at most ${MAX_BULK_RERUN_RANGE_DAYS} days after it. The server checks these (a 400 naming \`filter.to\`); a schema cannot state them.`,
    }),
  })
  .strict();
export type BulkRerunFilter = z.infer<typeof BulkRerunFilter>;

export const BulkRerunRequest = z
  .object({
    filter: BulkRerunFilter,
    from: RerunFrom.default('start'),
    /** Only count what the filter selects; start nothing and record nothing. */
    dry_run: z.boolean().default(false),
    /** The Temporal priority (1–5) of every re-run it starts; default one lower than each definition's. */
    priority: PriorityOverride.optional(),
  })
  .strict()
  .meta({ id: 'BulkRerunRequest' });
export type BulkRerunRequest = z.infer<typeof BulkRerunRequest>;

export const BulkRerunDryRun = z
  .object({ dry_run: z.literal(true), total: z.number().int() })
  .meta({ id: 'BulkRerunDryRun' });
export type BulkRerunDryRun = z.infer<typeof BulkRerunDryRun>;

/** The durable progress record of a bulk re-run (GET /v1/runs/rerun/{id}). */
export const BulkRerunRecord = z
  .object({
    id: z.uuid(),
    dry_run: z.literal(false),
    filter: z.object({
      activity_id: z.uuid().nullable(),
      status: RunStatus,
      trigger_type: TriggerType.nullable(),
      from: Timestamp,
      to: Timestamp,
    }),
    from: RerunFrom,
    /** `running` until every selected original has been handled, then `completed`. */
    status: z.enum(['running', 'completed']),
    /** Originals the filter selected when the request was accepted. */
    total: z.number().int(),
    /** Originals handled so far (`started` + `skipped`). */
    processed: z.number().int(),
    /** Re-runs this bulk re-run started. */
    started: z.number().int(),
    /** Originals not re-run: a re-run of them is already running or succeeded, or they can no longer be re-run (`skipped_reasons`). */
    skipped: z.number().int(),
    skipped_reasons: z.record(z.string(), z.number().int()),
    created_at: Timestamp,
    updated_at: Timestamp,
    completed_at: Timestamp.nullable(),
    /** The priority its request named for every re-run; null: the default (one lower than each definition's). */
    priority: z.number().int().nullable(),
  })
  .meta({ id: 'BulkRerun' });
export type BulkRerunRecord = z.infer<typeof BulkRerunRecord>;
