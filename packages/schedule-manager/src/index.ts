/**
 * @activity-core/schedule-manager — cron triggers on Temporal Schedules
 * (ADR 0010, docs/schedules.md): schedule sync and reconciliation, tick
 * processing with the misfire policies, pause / resume / trigger / backfill,
 * and the "why did / didn't this run" answers.
 */
export {
  createScheduleManager,
  type ScheduleManager,
  type ReconcileOptions,
  type ScheduleManagerDeps,
  type SyncOutcome,
} from './schedule-manager';
export { MAX_BACKFILL_FIRES } from './backfill-plan';
export { cronScheduleSummaries } from './schedule-views';
export { scheduleIssues } from './trigger-checks';
export { listSchedules, type ListedSchedule } from './schedule-listing';
