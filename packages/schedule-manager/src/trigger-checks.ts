/**
 * What the API needs from the schedule manager without touching Temporal:
 * registration checks beyond the definition schema, and the next fire times
 * an activity response shows.
 */
import type { ActivityDefinition, CronScheduleSummary, FieldIssue } from '@activity-core/contracts';
import { formatFireTime, nextFireTimes, toTemporalCronString } from '@activity-core/scheduling';
import { cronTriggersOf, scheduleIdFor } from './schedule-options';

/** How many upcoming fire times an activity response lists per cron trigger. */
export const NEXT_FIRE_TIMES = 5;

/**
 * Problems the definition schema cannot see: cron syntax that croner accepts
 * but Temporal Schedules do not (`L`, `W`, `#`, `?`). Each issue names the
 * field, e.g. `triggers[0].cron`.
 */
export function scheduleIssues(definition: Pick<ActivityDefinition, 'triggers'>): FieldIssue[] {
  const issues: FieldIssue[] = [];
  definition.triggers.forEach((trigger, index) => {
    if (trigger.type !== 'cron') return;
    try {
      toTemporalCronString(trigger.cron);
    } catch (error) {
      issues.push({ path: `triggers[${index}].cron`, message: (error as Error).message, code: 'invalid_cron' });
    }
  });
  return issues;
}

/** The `schedules` field of an activity response: per cron trigger, the next fire times (none while disabled). */
export function cronScheduleSummaries(
  row: { id: string; enabled: boolean; definition: Pick<ActivityDefinition, 'triggers'> },
  now: Date,
): CronScheduleSummary[] {
  return cronTriggersOf(row.definition as ActivityDefinition).map(({ trigger, triggerIndex }) => ({
    trigger_index: triggerIndex,
    schedule_id: scheduleIdFor(row.id, triggerIndex),
    cron: trigger.cron,
    timezone: trigger.timezone,
    misfire_policy: trigger.misfire_policy,
    next_fire_times: row.enabled ? nextFireTimes(trigger, now, NEXT_FIRE_TIMES).map((time) => formatFireTime(time, trigger.timezone)) : [],
  }));
}
