import { workflowInfo } from '@temporalio/workflow';

/**
 * The run's Temporal priority and fairness key for its record (`activity_runs.priority`,
 * `fairness_key`; docs/pacing.md), as the run workflow was started with them (read from its start
 * event). Each is absent when the start named none (a run started before they were set); the record
 * then stays null.
 *
 * Replay-safe: it only adds fields to the input of the bookkeeping activities (`logRun`,
 * `requestConcurrencySlot`, `requestOverlapSlot`), and an activity's input is not part of what replay
 * compares — the commands, their activity types and ids are unchanged (test/history-replay.int.test.ts).
 */
export function recordedPriority(): { priority?: number; fairnessKey?: string } {
  const priority = workflowInfo().priority;
  const key = priority?.priorityKey;
  const fairnessKey = priority?.fairnessKey;
  return {
    ...(key === undefined || key <= 0 ? {} : { priority: key }),
    ...(fairnessKey === undefined || fairnessKey === '' ? {} : { fairnessKey }),
  };
}
