/**
 * @activity-core/schedule-manager — cron triggers on Temporal Schedules
 * (SPEC §5.2, ADR 0010): schedule sync and reconciliation, tick processing
 * with the misfire policies, pause / resume / trigger / backfill, and the
 * "why did / didn't this run" answers.
 */
export { createScheduleManager, type ScheduleManager, type ScheduleManagerDeps, type SyncOutcome } from './schedule-manager';
export type { Logger } from './fire-processor';
export { cronScheduleSummaries, scheduleIssues } from './trigger-checks';
