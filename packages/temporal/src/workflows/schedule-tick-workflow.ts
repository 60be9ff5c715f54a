import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Effects, ProcessScheduleTickResult, ScheduleTickInput } from '../effects';

/** Set by Temporal on every workflow a Schedule starts: the nominal (un-jittered) time, whole seconds. */
const TemporalScheduledStartTime = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

const scheduling = proxyActivities<Effects>({
  // A catch-up may start up to max_catchup runs one after another.
  startToCloseTimeout: '5 minutes',
  // Until Postgres and Temporal answer: a tick that cannot decide yet is late, never lost.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * The action of a cron trigger's Temporal Schedule (ADR 0010).
 *
 * Temporal names this workflow itself (`schedule-tick-…-{time}`), so it is
 * not the run: it reads its nominal time from `TemporalScheduledStartTime`
 * and hands it to an activity that decides what every fire time due by now
 * gets and starts `activity-{id}:{scheduled_for}` with REJECT_DUPLICATE.
 * A tick started without that attribute (by a resume) processes everything
 * due up to now.
 */
export async function ScheduleTickWorkflow(input: ScheduleTickInput): Promise<ProcessScheduleTickResult> {
  const info = workflowInfo();
  const nominal = info.typedSearchAttributes.get(TemporalScheduledStartTime);
  return await scheduling.processScheduleTick({
    activityId: input.activityId,
    triggerIndex: input.triggerIndex,
    ...(nominal === undefined ? {} : { nominalTime: nominal.toISOString() }),
    tickWorkflowId: info.workflowId,
  });
}
