import {
  condition,
  continueAsNew,
  defineSignal,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Effects } from '../effects';
import { COALESCE_WINDOW_WAKE_SIGNAL } from '../names';
import { BOOKKEEPING_OPTIONS } from './effect-options';

/** What the workflow of a debounce window or a batch is started with (docs/coalescing.md). */
export interface CoalesceWindowInput {
  windowId: string;
  activityId: string;
  activityName: string;
}

/** What it ends with: the run the window became. */
export interface CoalesceWindowResult {
  runWorkflowId: string;
  members: number;
}

const windows = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);

/** Shortest sleep between two looks at a window that is not due yet (clock skew between Postgres and Temporal). */
const MIN_SLEEP_MS = 50;
/** Looks at the window before the workflow continues as new, so a key with a steady stream keeps a short history. */
const LOOKS_PER_HISTORY = 200;

/** A batch closed by a transaction (full, or at its byte cap): look now (ADR 0070). */
export const coalesceWindowWakeSignal = defineSignal(COALESCE_WINDOW_WAKE_SIGNAL);

/**
 * Histories recorded before batching slept with `sleep`; from this patch on the
 * wait is a condition on the wake signal with the same timer (ADR 0070).
 */
const WAKE_PATCH = 'coalesce-window-wake';

/**
 * The timer of one open debounce window (ADR 0066) or batch (ADR 0070): a
 * batch closed by the event that filled it wakes it with a signal. Postgres holds the
 * window's members and its due time; this workflow sleeps until the due time,
 * asks `advanceCoalesceWindow` (which pushes the sleep on when later events
 * moved the due time, or closes the window and starts its run when it is
 * due), and ends with the run the window became. Every step is idempotent:
 * a worker killed at any point, or a Temporal restart, repeats a step and
 * gets the same answer.
 */
export async function CoalesceWindowWorkflow(input: CoalesceWindowInput): Promise<CoalesceWindowResult> {
  let woken = false;
  setHandler(coalesceWindowWakeSignal, () => {
    woken = true;
  });
  for (let looks = 0; ; looks++) {
    // Cleared before the look: a wake that arrives while it runs makes the next wait end at once.
    woken = false;
    const step = await windows.advanceCoalesceWindow({ windowId: input.windowId });
    if (step.state === 'closed') {
      setCurrentDetails(`closed: ${step.members} events → run ${step.runWorkflowId}`);
      return { runWorkflowId: step.runWorkflowId, members: step.members };
    }
    setCurrentDetails(`open: ${step.members} events, due ${new Date(Date.now() + step.dueInMs).toISOString()}`);
    const info = workflowInfo();
    if (looks >= LOOKS_PER_HISTORY || info.continueAsNewSuggested)
      await continueAsNew<typeof CoalesceWindowWorkflow>(input);
    const waitMs = Math.max(MIN_SLEEP_MS, step.dueInMs);
    if (patched(WAKE_PATCH)) await condition(() => woken, waitMs);
    else await sleep(waitMs);
  }
}
