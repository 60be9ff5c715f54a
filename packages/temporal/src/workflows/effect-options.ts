import type { RetryPolicy as DefinitionRetryPolicy } from '@activity-core/contracts';
import { parseDurationMs } from '@activity-core/contracts/duration';
import {
  ActivityCancellationType,
  type ActivityOptions,
  type LocalActivityOptions,
  type RetryPolicy,
} from '@temporalio/workflow';

/**
 * Bookkeeping activities (Postgres writes) as ordinary activities: retried by
 * Temporal without limit until Postgres is back, so a database outage delays
 * a run, it never loses its records. Retries add no history events. Used by
 * runs recorded before LOCAL_BOOKKEEPING_PATCH, and by newer runs once the
 * local attempts below have given up (see workflows/bookkeeping.ts).
 */
export const BOOKKEEPING_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};

/**
 * The `patched()` id of running a run's and a task's bookkeeping as local
 * activities. Never reuse it, never rename it: histories carry it.
 */
export const LOCAL_BOOKKEEPING_PATCH = 'bookkeeping-as-local-activities';

/**
 * The `patched()` id of handing a local bookkeeping write that the worker
 * cancelled (not the workflow) to the ordinary activity, instead of failing
 * the run (see workflows/bookkeeping.ts). Never reuse it, never rename it.
 */
export const LOCAL_BOOKKEEPING_CANCEL_FALLBACK_PATCH = 'local-bookkeeping-worker-cancel-falls-back';

/**
 * The `patched()` id of scheduling `http` task attempts with
 * HTTP_TASK_CANCEL_OPTIONS, so that a cancelled task waits for its attempt in
 * flight to stop. Never reuse it, never rename it: histories carry it.
 */
export const HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH = 'http-task-waits-for-cancelled-attempt';

/**
 * What an `http` attempt is scheduled with, besides its timeout and retry
 * policy, in task workflows that have HTTP_WAIT_FOR_CANCELLED_ATTEMPT_PATCH
 * (adr/0045-http-attempts-stop-on-cancel.md). The attempt heartbeats every
 * 2 s (effects/http-task.ts) and the worker passes a heartbeat on to
 * Temporal at least every 5 s (`maxHeartbeatThrottleInterval`, worker.ts);
 * Temporal's answer carries a cancellation, which aborts the request — so a
 * cancelled attempt stops within about 5 s. `WAIT_CANCELLATION_COMPLETED`:
 * the task sees the cancellation only once the attempt has stopped (or has
 * timed out, on a worker that died). The heartbeat timeout lets Temporal
 * notice a dead worker's attempt after 30 s rather than at its start-to-close
 * timeout (the request's `timeout` + 10 s; 40 s for the default `30s`); the
 * retry policy and the request's own `timeout` are unchanged.
 */
export const HTTP_TASK_CANCEL_OPTIONS = {
  heartbeatTimeout: '30 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
} as const satisfies ActivityOptions;

/**
 * Bookkeeping as local activities: executed by the worker that runs the
 * workflow task, recorded as one marker event, no round trip through the
 * server. A write that fails is retried in the worker (0.25 s, 0.5 s, 1 s, …
 * at most 5 s apart, about ten attempts) for up to 30 s — a dropped
 * connection or a short failover; the worker keeps the workflow task alive
 * meanwhile. After 30 s the write falls back to BOOKKEEPING_OPTIONS. The
 * retry threshold is above the largest backoff, so the local attempts never
 * turn into server-side timers. A worker that dies mid-write loses nothing:
 * the workflow task times out and the next worker repeats the (idempotent)
 * write.
 */
export const LOCAL_BOOKKEEPING_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '30 seconds',
  localRetryThreshold: '30 seconds',
  retry: { initialInterval: '250 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
};

/** The defaults a task gets when neither it nor its definition sets a retry policy. */
export const DEFAULT_TASK_RETRY = {
  max_attempts: 3,
  initial_interval: '1s',
  backoff_coefficient: 2,
  maximum_interval: '1m',
  non_retryable_errors: [],
} as const satisfies DefinitionRetryPolicy;

export function toTemporalRetry(policy: DefinitionRetryPolicy | undefined): RetryPolicy {
  const p = policy ?? DEFAULT_TASK_RETRY;
  return {
    maximumAttempts: p.max_attempts,
    initialInterval: parseDurationMs(p.initial_interval),
    backoffCoefficient: p.backoff_coefficient,
    maximumInterval: parseDurationMs(p.maximum_interval),
    nonRetryableErrorTypes: [...p.non_retryable_errors],
  };
}
