import { createHash } from 'node:crypto';
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bearer } from './auth';
import { addressBucket } from './client-address';

export interface RateLimitOptions {
  /** Requests per key per window; 0 turns rate limiting off. */
  max: number;
  windowMs: number;
}

/**
 * Who a request is counted against:
 * - a bearer key (by its digest, so keys are not kept in memory in clear);
 *   authentication has already run, so only valid keys get here;
 * - otherwise (authentication off) the caller's address bucket (its /64 for
 *   IPv6, see addressBucket).
 * Webhook deliveries are not counted here but after verification, per
 * source (see WebhookLimits): unsigned junk must not spend a sender's budget.
 */
function rateLimitKey(request: FastifyRequest): string {
  const key = bearer(request);
  if (key !== undefined) return `key:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
  return `ip:${addressBucket(request.ip)}`;
}

/**
 * Per-key rate limit on every non-public route, counted in this process
 * (see adr/0014). Over the limit: 429 problem+json with Retry-After, built
 * by the error handler. Registered after auth, so its check runs after the
 * key check: a request with a bad key is a 401 and does not count.
 */
export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  if (options.max === 0) return;
  await app.register(fastifyRateLimit, {
    global: true,
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: rateLimitKey,
    // Health checks and the OpenAPI document are never limited; webhook deliveries are limited once verified.
    allowList: (request) => ['public', 'webhook'].includes(request.routeOptions.config.auth ?? 'public'),
    errorResponseBuilder: (_request, context) =>
      Object.assign(
        new Error(
          `rate limit of ${context.max} requests per ${Math.round(options.windowMs / 1000)} s exceeded; retry in ${context.after}`,
        ),
        {
          statusCode: context.statusCode,
        },
      ),
  });
}

/** Over a limit: answered 429 with Retry-After by the error handler. */
export class RateLimitedError extends Error {
  readonly statusCode = 429;
  readonly headers: { 'retry-after': string };

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.headers = { 'retry-after': String(retryAfterSeconds) };
  }
}

/**
 * Fixed-window counters per key, in this process. A key over `max` in its
 * window stays refused until the window ends. Expired windows are dropped as
 * the map grows, so a flood of distinct keys cannot hold memory for long.
 */
export function createWindowCounter(options: RateLimitOptions & { now?: () => number }) {
  const now = options.now ?? Date.now;
  const windows = new Map<string, { count: number; resetAt: number }>();
  let nextSweep = 0;

  function current(key: string): { count: number; resetAt: number } | undefined {
    const window = windows.get(key);
    if (window !== undefined && window.resetAt <= now()) {
      windows.delete(key);
      return undefined;
    }
    return window;
  }

  function sweep(): void {
    const at = now();
    if (windows.size < 10_000 || at < nextSweep) return;
    nextSweep = at + 1_000;
    for (const [key, window] of windows) if (window.resetAt <= at) windows.delete(key);
  }

  const secondsLeft = (window: { resetAt: number }): number => Math.max(1, Math.ceil((window.resetAt - now()) / 1000));

  return {
    max: options.max,
    windowMs: options.windowMs,
    /** Seconds until `key` may try again, or undefined when it is within its limit. */
    blocked(key: string): number | undefined {
      if (options.max === 0) return undefined;
      const window = current(key);
      return window !== undefined && window.count >= options.max ? secondsLeft(window) : undefined;
    },
    /** Counts one request against `key`; seconds to wait when this one is over the limit. */
    hit(key: string): number | undefined {
      if (options.max === 0) return undefined;
      sweep();
      const window = current(key) ?? { count: 0, resetAt: now() + options.windowMs };
      window.count += 1;
      windows.set(key, window);
      return window.count > options.max ? secondsLeft(window) : undefined;
    },
  };
}

/**
 * Limits on webhook ingress. New verified deliveries count against their
 * source (RATE_LIMIT_MAX per window, the budget an API key gets). Deliveries
 * that do not verify, and replays of deliveries already accepted, count
 * against the client address bucket (AUTH_FAILURE_LIMIT; an IPv6 /64, see
 * addressBucket). An address over that limit gets 429 for further deliveries
 * that fail verification, never for one that verifies: senders such as GitHub
 * share their addresses among all their customers, so anyone could otherwise
 * put a real sender's address over the limit with junk. Junk — from anyone,
 * aimed at any source name — never spends a sender's budget. Behind a proxy
 * set TRUST_PROXY, or every client shares the proxy's address.
 */
export function createWebhookLimits(options: { perSource: RateLimitOptions; failuresPerAddress: RateLimitOptions }) {
  const sources = createWindowCounter(options.perSource);
  const failures = createWindowCounter(options.failuresPerAddress);
  const window = (ms: number): string => `${Math.round(ms / 1000)} s`;
  return {
    /**
     * Counts a delivery that did not verify against its client address.
     * @throws {RateLimitedError} when this one puts or keeps the address over the limit
     */
    unverified(address: string): void {
      const wait = failures.hit(addressBucket(address));
      if (wait !== undefined) {
        throw new RateLimitedError(
          `too many deliveries from this address failed verification (limit ${options.failuresPerAddress.max} per ${window(options.failuresPerAddress.windowMs)}); retry in ${wait} s`,
          wait,
        );
      }
    },
    /** Counts a verified repeat of an accepted delivery (answered `duplicate`) against its client address; never refuses. */
    repeated(address: string): void {
      failures.hit(addressBucket(address));
    },
    /** Counts a new verified delivery against its source. @throws {RateLimitedError} over the source's budget */
    verified(source: string): void {
      const wait = sources.hit(source);
      if (wait !== undefined) {
        throw new RateLimitedError(
          `rate limit of ${options.perSource.max} deliveries per ${window(options.perSource.windowMs)} for this source exceeded; retry in ${wait} s`,
          wait,
        );
      }
    },
    /** Counts work already done for a source (a retry whose first attempt died), without refusing it. */
    spent(source: string): void {
      sources.hit(source);
    },
  };
}

export type WebhookLimits = ReturnType<typeof createWebhookLimits>;
