/**
 * @activity-core/scheduling — pure cron scheduling logic for the schedule
 * manager: nominal fire times, context windows, misfire plans. No I/O, no
 * clock reads; safe in workflow code.
 */
export {
  assertValidCronSpec,
  fireTimesBetween,
  InvalidCronError,
  nextFireTimes,
  previousFireTime,
  type CronSpec,
  type FireTimesInRange,
  type RangeKeep,
} from './cron-schedule';
export { formatLocalTime } from './fire-time-format';
export {
  isLate,
  planMisfire,
  type MisfirePlan,
  type MisfirePlanInput,
  type PlannedRun,
  type SkippedFire,
  type SkipReason,
} from './misfire';
export { toTemporalCronString } from './temporal-cron';
