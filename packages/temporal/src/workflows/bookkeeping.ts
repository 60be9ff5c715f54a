import {
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { Effects } from '../effects';
import {
  BOOKKEEPING_OPTIONS,
  LOCAL_BOOKKEEPING_CANCEL_FALLBACK_PATCH,
  LOCAL_BOOKKEEPING_OPTIONS,
  LOCAL_BOOKKEEPING_PATCH,
} from './effect-options';

/** A run's and a task's Postgres records: idempotent upserts (see effects/run-records.ts). */
export type Bookkeeping = Pick<Effects, 'logRun' | 'recordTask' | 'setRunStatus'>;

/** Each write a full Temporal round trip: scheduled, started and completed in the history. */
const durable: Bookkeeping = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);
const local: Bookkeeping = proxyLocalActivities<Effects>(LOCAL_BOOKKEEPING_OPTIONS);

/**
 * The bookkeeping a workflow uses for its whole execution. Call it once, at
 * the same point of every execution, before the first bookkeeping write:
 * `patched()` records its marker there (or, on replay, finds it or not).
 *
 * - Histories recorded before the change have no marker: they replay on the
 *   ordinary activities they were written with (`local: false`).
 * - Everything else runs the writes as local activities, inside the workflow
 *   task, each recorded as one marker. For up to LOCAL_BOOKKEEPING_OPTIONS'
 *   `scheduleToCloseTimeout` the worker retries a failing write itself; if
 *   Postgres is still unreachable then, the same write is handed to an
 *   ordinary activity with the old options, which Temporal retries without
 *   limit and without growing the history. A Postgres outage of any length
 *   delays the run; it never fails it or loses a record.
 */
export function bookkeepingForThisWorkflow(): { local: boolean; books: Bookkeeping } {
  if (!patched(LOCAL_BOOKKEEPING_PATCH)) return { local: false, books: durable };
  return {
    local: true,
    books: {
      logRun: (input) =>
        localFirst(
          () => local.logRun(input),
          () => durable.logRun(input),
        ),
      recordTask: (input) =>
        localFirst(
          () => local.recordTask(input),
          () => durable.recordTask(input),
        ),
      setRunStatus: (input) =>
        localFirst(
          () => local.setRunStatus(input),
          () => durable.setRunStatus(input),
        ),
    },
  };
}

async function localFirst<T>(attempt: () => Promise<T>, fallback: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    // A cancellation is the caller's to handle; anything else from a local attempt is an
    // outage that outlasted the local window (the writes themselves never fail for good).
    // Not `instanceof ActivityFailure`: the SDK (1.24) rejects with an ActivityFailure when
    // the local activity gives up live, but with its bare cause (e.g. a TimeoutFailure) when
    // the same marker is replayed; the decision must come out the same both times.
    //
    // A cancellation is the caller's only when the scope it runs in was cancelled. The worker
    // also cancels local activities of its own accord — evicting a workflow from its cache
    // (cache full, a workflow-task heartbeat that failed) while a write retries through a
    // Postgres outage — and that outcome can reach the workflow as a recorded "Local Activity
    // cancelled" marker. It says nothing about the run: the write goes to the ordinary activity,
    // like a write that outlasted the local window. Every local write runs in a non-cancellable
    // scope, so there a cancellation is always the worker's. Histories recorded before the patch
    // keep failing the way they did.
    if (
      isCancellation(error) &&
      (CancellationScope.current().consideredCancelled || !patched(LOCAL_BOOKKEEPING_CANCEL_FALLBACK_PATCH))
    )
      throw error;
    return await fallback();
  }
}
