/** Workflow type names as Temporal and the UI show them. */
export const RUN_ACTIVITY_WORKFLOW = 'RunActivityWorkflow';
export const TASK_WORKFLOW = 'TaskWorkflow';
/** The action of every cron trigger's Temporal Schedule (ADR 0010). */
export const SCHEDULE_TICK_WORKFLOW = 'ScheduleTickWorkflow';
/** One per (activity, concurrency key): hands out run slots (docs/concurrency.md). */
export const CONCURRENCY_COORDINATOR_WORKFLOW = 'ConcurrencyCoordinatorWorkflow';
