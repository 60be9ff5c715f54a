/**
 * When and how long to wait before sending a request again. Only requests
 * that are safe to repeat are retried (see `RetryMode`): after a network
 * error or timeout, a 5xx or a 429 — never after any other 4xx, which would
 * only be refused again.
 */
export interface RetryOptions {
  /** Requests per call, the first included. 1 turns retries off. @default 5 */
  maxAttempts: number;
  /** Wait before the second attempt; doubles each time. @default 250 */
  initialDelayMs: number;
  /** Longest computed wait between attempts. @default 8000 */
  maxDelayMs: number;
  /**
   * Longest Retry-After the client waits for. An answer asking for more is
   * thrown at once (with `retry_after` set), rather than blocking the caller.
   * @default 60000
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxAttempts: 5,
  initialDelayMs: 250,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

/** 429 and every 5xx: the server (or a proxy before it) may answer differently later. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/**
 * The wait after failed attempt `attempt` (1 = the first request):
 * exponential, capped, with "equal jitter" (half fixed, half random) so many
 * clients failing together do not retry in lockstep.
 */
export function backoffMs(
  attempt: number,
  options: Pick<RetryOptions, 'initialDelayMs' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.maxDelayMs, options.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Retry-After in milliseconds: delta-seconds (`5`) or an HTTP date.
 * Undefined when absent or unreadable; never negative.
 */
export function parseRetryAfterMs(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (header === null || header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * What to do after a failed attempt: wait this long and send again, or give
 * up. The server's Retry-After wins over the computed backoff when longer.
 */
export function nextDelayMs(
  attempt: number,
  options: RetryOptions,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | undefined {
  if (attempt >= options.maxAttempts) return undefined;
  if (retryAfterMs !== undefined && retryAfterMs > options.maxRetryAfterMs) return undefined;
  return Math.max(backoffMs(attempt, options, random), retryAfterMs ?? 0);
}
