import type { RunActivityInput, RunOutcome } from '@activity-core/contracts';
import { runIdFor } from '@activity-core/contracts/ids';
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { BOOKKEEPING_OPTIONS } from './activity-options';
import { overlapSlotAnswerSignal, slotReleaseSignal } from './concurrency';
import type { OverlapMode, SlotAnswer } from './concurrency-slots';

const slots = proxyActivities<Activities>(BOOKKEEPING_OPTIONS);

/** As for concurrency slots: a waiting run repeats its (idempotent) request this often. */
const REREQUEST_EVERY = '2 minutes';

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
      },
      activityName: activity.name,
      triggerIndex: overlap.triggerIndex,
      overlap: overlap.mode,
    });

  const requested = await request();
  const coordinator = getExternalWorkflowHandle(requested.coordinatorWorkflowId);
  let started = false;
  try {
    while (!(await condition(() => answer !== undefined, REREQUEST_EVERY))) await request();
    if (answer!.answer === 'skipped') {
      await slots.setRunStatus({
        runId,
        status: 'skipped',
        error: { message: answer!.reason, type: 'overlap', policy: overlap.mode, trigger_index: overlap.triggerIndex },
      });
      return { runId, status: 'skipped', tasks: [] };
    }
    await slots.markRunHoldsSlot({ runId });
    started = true;
    return await run();
  } catch (error) {
    if (!started && isCancellation(error)) {
      await CancellationScope.nonCancellable(() => slots.setRunStatus({ runId, status: 'cancelled', error: null }));
    }
    throw error;
  } finally {
    if (answer?.answer !== 'skipped') {
      await CancellationScope.nonCancellable(async () => {
        try {
          await coordinator.signal(slotReleaseSignal, { runWorkflowId: workflowId });
        } catch {
          // The coordinator is gone: it holds no slot for anyone, so there is nothing to release.
        }
      });
    }
  }
}
