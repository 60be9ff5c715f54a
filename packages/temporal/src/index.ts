export { createActivities, ATTEMPT_ID_HEADER, IDEMPOTENCY_KEY_HEADER, RUN_ID_HEADER, type Activities, type ActivityDeps, type EmitEvent } from './activities';
export { createRunStarter, type RunStarter, type StartOutcome, type StartRunOptions, type StartRunRequest } from './client/run-starter';
export { checkSearchAttributes, MissingSearchAttributesError } from './client/search-attribute-check';
export { createRunReconciler, type ReconciledOutcome, type RunReconciler, type RunReconcilerOptions } from './client/run-reconciler';
export { RUN_ACTIVITY_WORKFLOW, SCHEDULE_TICK_WORKFLOW, TASK_WORKFLOW } from './names';
export type { ProcessScheduleTick, ProcessScheduleTickInput, ProcessScheduleTickResult, ScheduleTickInput } from './activities';
export { SEARCH_ATTRIBUTE_KEYS, runSearchAttributes } from './search-attributes';
export { bundleWorkflows, createWorker, WORKFLOWS_PATH, type CreateWorkerOptions } from './worker';
