/** Workflow type names as Temporal and the UI show them. */
export const RUN_ACTIVITY_WORKFLOW = 'RunActivityWorkflow';
export const TASK_WORKFLOW = 'TaskWorkflow';
/** The action of every cron trigger's Temporal Schedule (ADR 0010). */
export const SCHEDULE_TICK_WORKFLOW = 'ScheduleTickWorkflow';
/** One per (activity, concurrency key): hands out run slots (docs/concurrency.md). */
export const CONCURRENCY_COORDINATOR_WORKFLOW = 'ConcurrencyCoordinatorWorkflow';
/**
 * The signal that resumes a `wait_for_event` task workflow with the event that
 * matched its wait (docs/wait-for-event.md). Never rename it: histories carry it.
 */
export const EVENT_WAIT_MATCHED_SIGNAL = 'eventWaitMatched';
/** One per open debounce window: holds its timer (docs/coalescing.md). */
export const COALESCE_WINDOW_WORKFLOW = 'CoalesceWindowWorkflow';
/**
 * The signal that makes a batch's `CoalesceWindowWorkflow` look at its window
 * now: a transaction closed the batch (full, or at its byte cap) and its run is
 * to start at once, not at the timeout. Never rename it: histories carry it.
 */
export const COALESCE_WINDOW_WAKE_SIGNAL = 'coalesceWindowWake';
