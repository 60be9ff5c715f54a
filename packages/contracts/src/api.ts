import { z } from 'zod';
import { StoredActivityDefinition } from './activity-definition';
import { FieldIssue } from './errors';
import { CronScheduleSummary } from './schedules';

/**
 * Statuses as the API reports them. `waiting_for_slot`: the run is queued
 * behind its activity's concurrency limit or its cron trigger's overlap policy;
 * `skipped`: the limit was reached and the definition says `on_limit: skip`, or
 * the trigger's overlap policy skipped it (the run's `error` says why).
 */
export const RunStatus = z.enum(['running', 'waiting_for_slot', 'succeeded', 'failed', 'cancelled', 'skipped']);
export const TaskStatus = z.enum(['running', 'succeeded', 'failed', 'cancelled', 'skipped']);
export const TriggerType = z.enum(['event', 'cron', 'manual', 'backfill', 'call']);
export type RunStatus = z.infer<typeof RunStatus>;
export type TaskStatus = z.infer<typeof TaskStatus>;
export type TriggerType = z.infer<typeof TriggerType>;

const Timestamp = z.string().meta({ format: 'date-time' });

export const ActivityRecord = z
  .object({
    id: z.uuid(),
    name: z.string(),
    version: z.number().int(),
    enabled: z.boolean(),
    definition: StoredActivityDefinition,
    created_at: Timestamp,
    updated_at: Timestamp,
    /** One entry per cron trigger, with its next fire times (UTC and local). */
    schedules: z.array(CronScheduleSummary).optional(),
  })
  .meta({ id: 'ActivityRecord' });
export type ActivityRecord = z.infer<typeof ActivityRecord>;

export const ErrorInfo = z.object({ message: z.string(), type: z.string().optional() }).passthrough();

/** Where a wait stands: `waiting`, or how it ended. */
export const EventWaitStatus = z.enum(['waiting', 'matched', 'timed_out', 'cancelled']);
export type EventWaitStatus = z.infer<typeof EventWaitStatus>;

/** Temporal's answer to the signal that resumes a matched wait's task. */
export const EventWaitSignalState = z.enum(['pending', 'delivered', 'already_closed']);
export type EventWaitSignalState = z.infer<typeof EventWaitSignalState>;

/** A `wait_for_event` task's wait, as recorded when it began waiting (docs/wait-for-event.md). */
export const EventWaitRecord = z
  .object({
    wait_id: z.string().meta({ description: 'The task workflow id: one wait per task.' }),
    status: EventWaitStatus.meta({
      description:
        '`waiting` until an event matched (`matched`), the timeout passed (`timed_out`) or the run was cancelled (`cancelled`).',
    }),
    event_type: z.string(),
    match: z.string().nullable(),
    matched_event_id: z.string().nullable().meta({
      description: 'The event that ended the wait; its decision log (GET /v1/events/{event_id}) lists this wait.',
    }),
    signal: EventWaitSignalState.nullable().meta({
      description:
        'After a match: `pending` until Temporal took the signal that resumes the task (retried like a pending route), `delivered`, or `already_closed` when the task had ended first.',
    }),
    detail: z.string().nullable(),
    registered_at: z.string(),
    expires_at: z.string(),
    closed_at: z.string().nullable(),
  })
  .meta({ id: 'EventWait' });
export type EventWaitRecord = z.infer<typeof EventWaitRecord>;

export const TaskInstanceRecord = z
  .object({
    id: z.uuid(),
    run_id: z.uuid(),
    task_type: z.string(),
    task_index: z.number().int(),
    workflow_id: z.string(),
    status: TaskStatus,
    attempt_count: z.number().int(),
    result: z.unknown().nullable(),
    error: ErrorInfo.nullable(),
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
    wait: EventWaitRecord.optional().meta({
      description: 'Only on `wait_for_event` tasks that began waiting: the wait, and the event that ended it.',
    }),
    task_key: z.string().optional().meta({ description: "The task's `key` in the definition, when it has one." }),
    item_index: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Only on the items of a `for_each` task: which item (0-based) this row is.' }),
    skipped: z
      .object({
        reason: z.enum(['condition_false', 'need_failed', 'no_need_failed']),
        expression: z.string().optional(),
        value: z.unknown().optional(),
        rule: z.string().optional(),
        needs: z.array(z.number().int()).optional(),
      })
      .optional()
      .meta({
        description:
          'Only on `skipped` tasks: why the task did not run — its `if` was false (`condition_false`, with the expression and its value), a task it needs failed (`need_failed`, with the indices of those needs), or an `any_failed` task found no failed need (`no_need_failed`).',
      }),
  })
  .meta({ id: 'TaskInstance' });
export type TaskInstanceRecord = z.infer<typeof TaskInstanceRecord>;

export const RunRecord = z
  .object({
    run_id: z.uuid(),
    workflow_id: z.string(),
    activity_id: z.uuid(),
    activity_version: z.number().int(),
    trigger_type: TriggerType,
    scheduled_for: z.string().nullable(),
    event_id: z.string().nullable(),
    window_start: Timestamp.nullable(),
    window_end: Timestamp.nullable(),
    status: RunStatus,
    error: ErrorInfo.nullable(),
    started_at: Timestamp,
    finished_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
    cancelled_by_event: z.string().nullable().meta({
      description:
        "The event whose `cancel_on` match requested this run's cancellation (its decision is in GET /v1/events/{event_id}); null when no event cancelled it.",
    }),
    parent_run_id: z.uuid().optional().meta({
      description:
        "Only on runs started by a `run_activity` task of another run (trigger_type `call`): that run. Its task instance holds this run's id in its result.",
    }),
    cancelled_by_run: z.string().nullable().meta({
      description:
        "The workflow id of the newer cron run whose trigger's `cancel_other` overlap policy requested this run's cancellation; null otherwise.",
    }),
    priority: z.number().int().min(1).max(5).nullable().meta({
      description:
        "The Temporal task-queue priority the run was started with, 1 (highest) to 5: the definition's `priority` (default 3), one lower for re-runs, backfills and cron catch-ups, or the `priority` a re-run or backfill request named. Null for runs recorded before priorities were recorded. See docs/pacing.md.",
    }),
    not_before: Timestamp.nullable().meta({
      description:
        "Only for a run its activity's `throttle` delayed: the time Temporal held its start until (the `not_before` of its event's route, GET /v1/events/{event_id}). Null for every other run, re-runs included.",
    }),
    fairness_key: z.string().nullable().meta({
      description:
        "The Temporal fairness key the run was started with: the value of the definition's `fairness.key` over its event, else the activity's id (a run started by a `run_activity` task shares its caller's). Null for runs recorded before fairness keys were recorded. See docs/pacing.md.",
    }),
  })
  .meta({ id: 'Run' });
export type RunRecord = z.infer<typeof RunRecord>;

export const RunWithTasks = RunRecord.extend({ tasks: z.array(TaskInstanceRecord) }).meta({ id: 'RunWithTasks' });
export type RunWithTasks = z.infer<typeof RunWithTasks>;

/**
 * What routing decided for one event and one activity whose trigger matched
 * its type and source:
 * - `pending`: a run is due; Temporal has not confirmed the start yet (it is
 *   retried until it does).
 * - `started`: this event started the run.
 * - `duplicate`: the run already existed (a redelivery); nothing new started.
 * - `filtered`: the trigger's filter was false for this event; no run.
 * - `filter_error`: the filter could not be evaluated on this event (e.g. a
 *   missing key); no run, and `detail` says why.
 * - `dropped`: the activity's `rate_limit` was reached; no run, and `detail`
 *   names the limit and the key.
 * - `coalescing`: the event is in an open debounce window or batch (`detail`
 *   names it); it becomes `merged` or `started` (debounce) or `batched`.
 * - `merged`: the event was merged into another event's run (`workflow_id`
 *   and `run_id` name that run; `detail` says why). See docs/coalescing.md.
 * - `batched`: the event is one of the events of a batch's run (`workflow_id`
 *   and `run_id` name it, `detail` says `in batch <window> (k of N)`).
 * - `held`: the activity was disabled with `when_disabled.action: hold`; the
 *   event waits for a release (it becomes `pending`, then `started`) until
 *   the route's `expires_at`. `discarded`: an operator discarded it while
 *   held; `expired`: its hold ran out. See docs/recovery.md, "Held events".
 * - `dead_letter`: the run could not be started and will not be retried on
 *   its own (`reason_code` says why, `detail` what failed); retried or
 *   discarded through `/v1/dead-letters` (docs/recovery.md).
 */
export const RouteOutcome = z.enum([
  'started',
  'duplicate',
  'pending',
  'filtered',
  'filter_error',
  // pacing (docs/pacing.md)
  'dropped',
  // coalescing (docs/coalescing.md)
  'coalescing',
  'merged',
  // batching (docs/coalescing.md, "Batching")
  'batched',
  // held events (docs/recovery.md)
  'held',
  'discarded',
  'expired',
  // dead letters (docs/recovery.md)
  'dead_letter',
]);
export type RouteOutcome = z.infer<typeof RouteOutcome>;

/**
 * The outcomes of routes that lead to a run, as a new event's answer gives
 * them; `dead_letter`: the start was refused for good (docs/recovery.md,
 * "Dead letters"), nothing will retry it on its own.
 */
export const RunRouteOutcome = z.enum(['started', 'duplicate', 'pending', 'coalescing', 'dead_letter']);
export type RunRouteOutcome = z.infer<typeof RunRouteOutcome>;

/** The outcomes of routes a filter stopped. */
export const FilteredRouteOutcome = z.enum(['filtered', 'filter_error']);
export type FilteredRouteOutcome = z.infer<typeof FilteredRouteOutcome>;

export const EventRunResult = z.object({
  activity_id: z.uuid(),
  activity_name: z.string(),
  workflow_id: z.string(),
  run_id: z.uuid(),
  status: RunRouteOutcome,
});
export type EventRunResult = z.infer<typeof EventRunResult>;

/** An activity whose trigger matched the event's type but whose filter stopped it. */
export const EventFilteredResult = z.object({
  activity_id: z.uuid(),
  activity_name: z.string(),
  status: FilteredRouteOutcome,
  /** The filter that said no, or the evaluation error. */
  detail: z.string(),
});
export type EventFilteredResult = z.infer<typeof EventFilteredResult>;

export const EventAcceptedResponse = z
  .object({
    event_id: z.string(),
    /** True when the ingress assigned the id because the delivery carried none. */
    event_id_assigned: z.boolean(),
    status: z.enum(['accepted', 'duplicate']),
    /** One entry per activity that runs for this event. Only in answers to management keys (and while authentication is off). */
    runs: z.array(EventRunResult).optional().meta({
      description:
        'One entry per activity that runs for this event. Only in answers to management keys (and while authentication is off): ingest keys and webhook senders are not told which activities exist.',
    }),
    /** Activities whose filter stopped this event (no run); the full story is at GET /v1/events/{event_id}. Management keys only, like `runs`. */
    filtered: z.array(EventFilteredResult).optional().meta({
      description:
        'Activities whose filter stopped this event (no run); the full story is at GET /v1/events/{event_id}. Only in answers to management keys, like `runs`.',
    }),
  })
  .meta({ id: 'EventAccepted' });
export type EventAcceptedResponse = z.infer<typeof EventAcceptedResponse>;
/** The whole answer, as the ingest makes it and a management key receives it: with `runs` and `filtered`. */
export type EventAcceptedWithRoutes = EventAcceptedResponse &
  Required<Pick<EventAcceptedResponse, 'runs' | 'filtered'>>;

/** RFC 9457 problem details with field-level errors. */
export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    request_id: z.string().optional(),
    event_id: z.string().optional().meta({
      description:
        'On a 503 after the event store failed mid-write: the id the event may be stored under; retry with it (as event_id or Idempotency-Key).',
    }),
    errors: z.array(FieldIssue).optional(),
  })
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof Problem>;

export const Page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), next_cursor: z.string().nullable() });
