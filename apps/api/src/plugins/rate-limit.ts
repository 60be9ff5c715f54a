import { createHash } from 'node:crypto';
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bearer } from './auth';

export interface RateLimitOptions {
  /** Requests per key per window; 0 turns rate limiting off. */
  max: number;
  windowMs: number;
}

/**
 * Who a request is counted against:
 * - a bearer key (by its digest, so keys are not kept in memory in clear);
 *   authentication has already run, so only valid keys get here;
 * - a webhook source together with the caller's address, so unsigned noise
 *   aimed at a source cannot use up the real sender's allowance;
 * - otherwise (authentication off) the caller's address.
 */
function rateLimitKey(request: FastifyRequest): string {
  if (request.routeOptions.config.auth === 'webhook') {
    return `webhook:${(request.params as { source?: string }).source ?? ''}:${request.ip}`;
  }
  const key = bearer(request);
  if (key !== undefined) return `key:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
  return `ip:${request.ip}`;
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
    // Health checks and the OpenAPI document are never limited.
    allowList: (request) => (request.routeOptions.config.auth ?? 'public') === 'public',
    errorResponseBuilder: (_request, context) =>
      Object.assign(new Error(`rate limit of ${context.max} requests per ${Math.round(options.windowMs / 1000)} s exceeded; retry in ${context.after}`), {
        statusCode: context.statusCode,
      }),
  });
}
