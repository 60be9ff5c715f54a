import { createHash } from 'node:crypto';
import type { ActivitySnapshot, RunTrigger } from '@activity-core/contracts';
import { compileKeyExpression, evaluateKey, type CompiledFilter } from '@activity-core/filters';

/** Temporal's limit on a fairness key, in UTF-8 bytes. */
export const MAX_FAIRNESS_KEY_BYTES = 64;

/** What a run is started with for Temporal's fairness (docs/pacing.md, "Fairness"). */
export interface RunFairness {
  fairnessKey: string;
  /** Only when the definition names one (Temporal's default is 1). */
  fairnessWeight?: number;
}

const compiledKeys = new Map<string, CompiledFilter | string>();

/** A key expression compiled once per process; a string is why it does not compile. */
function compiledKey(expression: string): CompiledFilter | string {
  let compiled = compiledKeys.get(expression);
  if (compiled === undefined) {
    const result = compileKeyExpression(expression);
    compiled = result.ok ? result.filter : result.error.message;
    if (compiledKeys.size > 1000) compiledKeys.clear();
    compiledKeys.set(expression, compiled);
  }
  return compiled;
}

/**
 * A key value as Temporal takes it: as it is when it fits in 64 bytes, else `sha256:` and the first 32
 * hex digits of its SHA-256 (two long keys stay apart; the same long key always maps to the same key).
 */
export function boundedFairnessKey(value: string): string {
  if (Buffer.byteLength(value, 'utf8') <= MAX_FAIRNESS_KEY_BYTES) return value;
  return `sha256:${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}

/**
 * A run's fairness key and weight: the definition's `fairness.key` evaluated over the run's event
 * (event runs and their re-runs), else — no key expression, no event, or a key that cannot be
 * evaluated — the activity's id, so by default each activity is one fairness key on the task queue.
 */
export function runFairness(activity: ActivitySnapshot, trigger: RunTrigger): RunFairness {
  const fairness = activity.definition.fairness;
  const weight = fairness?.weight === undefined ? {} : { fairnessWeight: fairness.weight };
  const fallback = { fairnessKey: activity.id, ...weight };
  if (fairness?.key === undefined || trigger.type !== 'event') return fallback;
  const compiled = compiledKey(fairness.key);
  if (typeof compiled === 'string') return fallback;
  const outcome = evaluateKey(compiled, trigger.event);
  return outcome.outcome === 'key' ? { fairnessKey: boundedFairnessKey(outcome.key), ...weight } : fallback;
}
