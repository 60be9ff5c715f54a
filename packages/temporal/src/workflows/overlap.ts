import type { RunActivityInput, RunOutcome } from '@activity-core/contracts';
import { runIdFor } from '@activity-core/contracts/ids';
import { proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Effects } from '../effects';
import { BOOKKEEPING_OPTIONS } from './effect-options';
import { recordedPriority } from './run-priority';
import { holdSlot, overlapSlotAnswerSignal } from './concurrency-coordinator';
import type { OverlapMode, SlotAnswer } from './concurrency-slots';

const slots = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);

/**
 * Runs `run` once this cron run holds its trigger's overlap slot
 * (docs/schedules.md, "Overlapping runs"), and gives the slot back when `run`
 * ends however it ends. A run the policy skips ends `skipped` with an
 * `overlap` error saying why; a run cancelled while it waits ends `cancelled`.
 */
export async function withOverlapSlot(
  input: RunActivityInput,
  overlap: { mode: OverlapMode; triggerIndex: number },
  run: () => Promise<RunOutcome>,
): Promise<RunOutcome> {
  const { workflowId } = workflowInfo();
  const runId = runIdFor(workflowId);
  const { activity, trigger } = input;
  if (trigger.type !== 'cron') throw new Error('only cron runs have an overlap policy');
  let answer: SlotAnswer | undefined;
  setHandler(overlapSlotAnswerSignal, (received) => {
    if (received.runWorkflowId === workflowId) answer ??= received;
  });
  const request = () =>
    slots.requestOverlapSlot({
      run: {
        runId,
        workflowId,
        activityId: activity.id,
        activityVersion: activity.version,
        triggerType: trigger.type,
        scheduledFor: trigger.scheduled_for,
        windowStart: trigger.window_start,
        windowEnd: trigger.window_end,
        ...recordedPriority(),
      },
      activityName: activity.name,
      triggerIndex: overlap.triggerIndex,
      overlap: overlap.mode,
    });

  const requested = await request();
  return await holdSlot({
    runId,
    workflowId,
    coordinatorWorkflowId: requested.coordinatorWorkflowId,
    answer: () => answer,
    request,
    skipped: (reason) => ({
      message: reason,
      type: 'overlap',
      policy: overlap.mode,
      trigger_index: overlap.triggerIndex,
    }),
    run,
  });
}
