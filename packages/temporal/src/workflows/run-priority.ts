import { workflowInfo } from '@temporalio/workflow';

/**
 * The run's Temporal priority for its record (`activity_runs.priority`, docs/pacing.md): the priority
 * key the run workflow was started with, read from its start event. Absent when the start named none
 * (a run started before priorities were set); the record then stays null.
 *
 * Replay-safe: it only adds a field to the input of the bookkeeping activities (`logRun`,
 * `requestConcurrencySlot`, `requestOverlapSlot`), and an activity's input is not part of what replay
 * compares — the commands, their activity types and ids are unchanged (test/history-replay.int.test.ts).
 */
export function recordedPriority(): { priority?: number } {
  const key = workflowInfo().priority?.priorityKey;
  return key === undefined || key <= 0 ? {} : { priority: key };
}
