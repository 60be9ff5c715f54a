/**
 * Registration checks beyond the definition schema, for the API to run
 * before it stores a definition. No Temporal calls.
 */
import type { ActivityDefinition, FieldIssue } from '@activity-core/contracts';
import { toTemporalCronString } from '@activity-core/scheduling';

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
