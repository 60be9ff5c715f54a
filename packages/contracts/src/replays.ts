import { z } from 'zod';
import { Rfc3339DateTime } from './date-time';

const Timestamp = z.string().meta({ format: 'date-time' });

/**
 * How an event is replayed against today's definitions. `if_no_runs`: only
 * the runs whose deterministic id (`activity-{activity_id}:{event_id}`) never
 * ran are started; an activity that already ran the event is answered with
 * that run. `force`: a new run per matching activity,
 * `replay-{run_id}:{attempt}`, linked to the event's own run id.
 */
export const ReplayMode = z.enum(['if_no_runs', 'force']);
export type ReplayMode = z.infer<typeof ReplayMode>;

/** Longest time range (by `received_at`) one bulk replay may select. */
export const MAX_BULK_REPLAY_RANGE_DAYS = 31;
/** Most events one bulk replay may select; a larger selection is refused (narrow the filter or split the range). */
export const MAX_BULK_REPLAY_EVENTS = 10_000;

export const ReplayRequest = z
  .object({ mode: ReplayMode.default('if_no_runs') })
  .strict()
  .meta({ id: 'ReplayRequest' });
export type ReplayRequest = z.infer<typeof ReplayRequest>;

/** What a replay did for one activity today's definitions route the event to. */
export const ReplayRun = z.object({
  activity_id: z.uuid(),
  activity_name: z.string(),
  workflow_id: z.string(),
  run_id: z.uuid(),
  /**
   * `started`: a run was started now. `already_ran`: (`if_no_runs`) the
   * event's run of this activity was started before; nothing new.
   * `duplicate`: Temporal (or the run record) already had this run, or this
   * request key already named this forced replay. `pending`: recorded, not
   * yet started (Temporal did not answer); the dispatcher (`if_no_runs`) or
   * the same request again (`force`) starts it.
   */
  status: z.enum(['started', 'already_ran', 'duplicate', 'pending']),
  /** For `force`: the event's own run of this activity, which the replay is linked to. */
  replay_of: z.uuid().nullable(),
  /** For `force`: 1 for the first forced replay of this event for this activity, 2 for the next, … */
  attempt: z.number().int().nullable(),
});
export type ReplayRun = z.infer<typeof ReplayRun>;

export const ReplayResponse = z
  .object({
    event_id: z.string(),
    mode: ReplayMode,
    runs: z.array(ReplayRun),
    /** Activities whose triggers match the event today but whose filters leave it out (nothing started for them). */
    filtered: z.array(
      z.object({
        activity_id: z.uuid(),
        activity_name: z.string(),
        status: z.enum(['filtered', 'filter_error']),
        detail: z.string(),
      }),
    ),
  })
  .meta({ id: 'ReplayResponse' });
export type ReplayResponse = z.infer<typeof ReplayResponse>;

/**
 * Which stored events a bulk replay selects. `outcome`: `unmatched` — no
 * route leads to a run (nothing matched, or only filters answered: activity
 * missing, disabled or registered later); `filtered` — some filter left it
 * out or failed; `pending` — some run is still waiting to be started;
 * `any` (default).
 */
export const BulkReplayOutcome = z.enum(['any', 'unmatched', 'filtered', 'pending']);
export type BulkReplayOutcome = z.infer<typeof BulkReplayOutcome>;

export const BulkReplayFilter = z
  .object({
    /** An event type, or a prefix pattern `order.*`. */
    event_type: z.string().min(1).max(256).optional(),
    source: z.string().min(1).max(1024).optional(),
    outcome: BulkReplayOutcome.default('any'),
    /** Events received at or after this instant (inclusive). */
    from: Rfc3339DateTime,
    /** Events received before this instant (exclusive). */
    to: Rfc3339DateTime.meta({
      description: `Events received before this instant (exclusive): after \`from\` (a \`to\` in the future counts as now) and at most ${MAX_BULK_REPLAY_RANGE_DAYS} days after it. Checked by the server (a 400 naming \`filter.to\`).`,
    }),
  })
  .strict();
export type BulkReplayFilter = z.infer<typeof BulkReplayFilter>;

export const BulkReplayRequest = z
  .object({
    filter: BulkReplayFilter,
    mode: ReplayMode.default('if_no_runs'),
    /** Only count what the filter selects (up to one more than the cap); start nothing and record nothing. */
    dry_run: z.boolean().default(false),
  })
  .strict()
  .meta({ id: 'BulkReplayRequest' });
export type BulkReplayRequest = z.infer<typeof BulkReplayRequest>;

export const BulkReplayDryRun = z
  .object({
    dry_run: z.literal(true),
    /** Events selected, counted up to `cap + 1`. */
    total: z.number().int(),
    /** Most events one bulk replay takes. */
    cap: z.number().int(),
    /** More than `cap` events match: the request would be refused. */
    over_cap: z.boolean(),
  })
  .meta({ id: 'BulkReplayDryRun' });
export type BulkReplayDryRun = z.infer<typeof BulkReplayDryRun>;

/** The durable progress record of a bulk replay (GET /v1/events/replay/{id}). */
export const BulkReplayRecord = z
  .object({
    id: z.uuid(),
    dry_run: z.literal(false),
    filter: z.object({
      event_type: z.string().nullable(),
      source: z.string().nullable(),
      outcome: BulkReplayOutcome,
      from: Timestamp,
      to: Timestamp,
    }),
    mode: ReplayMode,
    /** `running` until every selected event has been replayed, then `completed`. */
    status: z.enum(['running', 'completed']),
    /** Events the filter selected when the request was accepted. */
    total: z.number().int(),
    /** Events replayed so far. */
    processed: z.number().int(),
    /** Runs the replay started. */
    started: z.number().int(),
    /** Events for which nothing new was started (`skipped_reasons`: `already_ran`, `no_match`, `filtered`, `payload_expired`). */
    skipped: z.number().int(),
    skipped_reasons: z.record(z.string(), z.number().int()),
    created_at: Timestamp,
    updated_at: Timestamp,
    completed_at: Timestamp.nullable(),
  })
  .meta({ id: 'BulkReplay' });
export type BulkReplayRecord = z.infer<typeof BulkReplayRecord>;

/** The body of `POST /v1/events/{event_id}/replay`: optional, `{ mode: 'if_no_runs' }` when absent. */
export const OptionalReplayRequest = ReplayRequest.nullish().transform(
  (body) => body ?? { mode: 'if_no_runs' as const },
);
