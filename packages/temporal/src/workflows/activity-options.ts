import type { RetryPolicy as DefinitionRetryPolicy } from '@activity-core/contracts';
import { parseDurationMs } from '@activity-core/contracts/duration';
import type { ActivityOptions, RetryPolicy } from '@temporalio/workflow';

/**
 * Bookkeeping activities (Postgres writes) retry until Postgres is back: a
 * database outage delays a run, it never loses its records.
 */
export const BOOKKEEPING_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
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
