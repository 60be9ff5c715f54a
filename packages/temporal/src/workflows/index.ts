/** The workflow bundle's entry point (`workflowsPath`). Workflows only: no effects (Temporal activities), no Node modules. */
export { RunActivityWorkflow } from './run-activity-workflow';
export { TaskWorkflow } from './task-workflow';
export { ScheduleTickWorkflow } from './schedule-tick-workflow';
export { ConcurrencyCoordinatorWorkflow } from './concurrency-coordinator';
export { CoalesceWindowWorkflow } from './coalesce-window-workflow';
