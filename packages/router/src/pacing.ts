/**
 * Pacing of event runs (docs/pacing.md, ADR 0067): what a definition's
 * `throttle` and `rate_limit` ask of the bucket store for one event. Pure
 * apart from a bounded cache of compiled key expressions.
 */
import {
  parseDurationMs,
  type ActivityDefinition,
  type EventEnvelope,
  type RateLimit,
  type Throttle,
} from '@activity-core/contracts';
import type { PacingRequest } from '@activity-core/db';
import { compileKeyExpression, evaluateKey, type CompiledFilter } from '@activity-core/filters';

/** Compiled key expressions kept per process; past this many the cache starts again (memory stays bounded). */
const MAX_COMPILED_KEYS = 1_000;
const compiledKeys = new Map<string, CompiledFilter | string>();

function compiledKey(expression: string): CompiledFilter | string {
  let compiled = compiledKeys.get(expression);
  if (compiled === undefined) {
    const result = compileKeyExpression(expression);
    compiled = result.ok ? result.filter : result.error.message;
    if (compiledKeys.size >= MAX_COMPILED_KEYS) compiledKeys.clear();
    compiledKeys.set(expression, compiled);
  }
  return compiled;
}

/**
 * The bucket key of one event under one policy: the key expression's value,
 * or `''` (the activity-wide bucket) when there is no expression or it cannot
 * be evaluated on this event (then `keyError` says why, for the record).
 */
export function pacingKeyFor(
  expression: string | undefined,
  envelope: EventEnvelope,
): { key: string; keyError?: string } {
  if (expression === undefined) return { key: '' };
  const compiled = compiledKey(expression);
  if (typeof compiled === 'string') return { key: '', keyError: compiled };
  const outcome = evaluateKey(compiled, envelope);
  return outcome.outcome === 'key' ? { key: outcome.key } : { key: '', keyError: outcome.message };
}

function rateText(policy: { limit: number; period: string }): string {
  return `${policy.limit} per ${policy.period}`;
}

function keyText(key: string, keyError: string | undefined): string {
  if (keyError !== undefined) return `the activity-wide bucket (the key could not be evaluated: ${keyError})`;
  return key === '' ? 'the activity-wide bucket' : `key ${JSON.stringify(key)}`;
}

/** What the bucket store is asked for one event of a paced activity; undefined when the activity is not paced. */
export function pacingRequestFor(
  definition: Pick<ActivityDefinition, 'throttle' | 'rate_limit'>,
  envelope: EventEnvelope,
  route: { eventId: string; activityId: string },
): PacingRequest | undefined {
  const throttle: Throttle | undefined = definition.throttle;
  const rateLimit: RateLimit | undefined = definition.rate_limit;
  if (throttle === undefined && rateLimit === undefined) return undefined;
  const request: PacingRequest = { eventId: route.eventId, activityId: route.activityId };
  if (rateLimit !== undefined) {
    const periodMs = parseDurationMs(rateLimit.period);
    const { key, keyError } = pacingKeyFor(rateLimit.key, envelope);
    request.rateLimit = {
      key,
      periodMs,
      intervalMs: periodMs / rateLimit.limit,
      describe: () => `dropped by rate_limit: ${rateText(rateLimit)} reached for ${keyText(key, keyError)}`,
    };
  }
  if (throttle !== undefined) {
    const { key, keyError } = pacingKeyFor(throttle.key, envelope);
    const burst = throttle.burst ?? 1;
    request.throttle = {
      key,
      burst,
      intervalMs: parseDurationMs(throttle.period) / throttle.limit,
      describe: (_key, until) =>
        `delayed by throttle (${rateText(throttle)}, burst ${burst}) until ${until.toISOString()} for ${keyText(key, keyError)}`,
    };
  }
  return request;
}
