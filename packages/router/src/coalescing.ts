/**
 * Debounce on the event path (docs/coalescing.md, ADR 0066): which debounce an
 * event's route falls under, and its key. Pure; the window itself is joined by
 * the dispatch (event-dispatch.ts) in Postgres.
 */
import {
  BATCH_LIMITS,
  DEBOUNCE_LIMITS,
  parseDurationMs,
  type ActivityDefinition,
  type Batch,
  type Debounce,
  type EventEnvelope,
} from '@activity-core/contracts';
import { compileKeyExpression, evaluateKey, type CompiledFilter } from '@activity-core/filters';
import { eventTriggerMatches, filterPasses } from './matching';

/** Most open debounce windows per activity; past it an event of a new key runs alone (recorded). */
export const COALESCE_MAX_OPEN_WINDOWS = 10_000;

/** A debounce as the dispatch applies it: its durations in ms. */
export interface DebouncePlan {
  debounce: Debounce;
  periodMs: number;
  maxWaitMs: number;
}

/**
 * The debounce of the first of the definition's event triggers that matches
 * the event (type, source, and filter when it has one) — the trigger that
 * decided the event's run. Undefined when that trigger has none (or the
 * definition has no debounce at all: nothing is evaluated then).
 */
export function debounceFor(
  definition: Pick<ActivityDefinition, 'triggers'>,
  envelope: EventEnvelope,
): DebouncePlan | undefined {
  if (!definition.triggers.some((trigger) => trigger.type === 'event' && trigger.debounce !== undefined))
    return undefined;
  for (const trigger of definition.triggers) {
    if (trigger.type !== 'event' || !eventTriggerMatches(trigger, envelope)) continue;
    if (!filterPasses(trigger, envelope)) continue;
    if (trigger.debounce === undefined) return undefined;
    const periodMs = parseDurationMs(trigger.debounce.period);
    // Absent: a pure debounce, held open as long as events keep coming within the period, up to the 7 d bound.
    const maxWaitMs = parseDurationMs(trigger.debounce.max_wait ?? DEBOUNCE_LIMITS.maxWait);
    return { debounce: trigger.debounce, periodMs, maxWaitMs: Math.max(periodMs, maxWaitMs) };
  }
  return undefined;
}

/** A batch as the dispatch applies it: its timeout in ms and its byte cap with the default applied. */
export interface BatchPlan {
  batch: Batch;
  timeoutMs: number;
  maxBytes: number;
}

/**
 * The batch of the first of the definition's event triggers that matches the
 * event (as {@link debounceFor}). Undefined when that trigger has none (or the
 * definition batches nowhere: nothing is evaluated then).
 */
export function batchFor(
  definition: Pick<ActivityDefinition, 'triggers'>,
  envelope: EventEnvelope,
): BatchPlan | undefined {
  if (!definition.triggers.some((trigger) => trigger.type === 'event' && trigger.batch !== undefined)) return undefined;
  for (const trigger of definition.triggers) {
    if (trigger.type !== 'event' || !eventTriggerMatches(trigger, envelope)) continue;
    if (!filterPasses(trigger, envelope)) continue;
    if (trigger.batch === undefined) return undefined;
    return {
      batch: trigger.batch,
      timeoutMs: parseDurationMs(trigger.batch.timeout),
      maxBytes: trigger.batch.max_bytes ?? BATCH_LIMITS.defaultBytes,
    };
  }
  return undefined;
}

/** An event's size as a batch counts it: the UTF-8 bytes of its envelope's JSON. */
export function batchBytesOf(envelope: EventEnvelope): number {
  return new TextEncoder().encode(JSON.stringify(envelope)).length;
}

const compiledKeys = new Map<string, CompiledFilter | string>();

/**
 * The event's debounce key: the key expression's value, or `''` (one key for
 * the activity) when there is none. An error (the expression fails on this
 * event) is returned, and the event runs alone.
 */
export function debounceKeyOf(
  debounce: Debounce | Batch,
  envelope: EventEnvelope,
): { key: string } | { error: string } {
  if (debounce.key === undefined) return { key: '' };
  let compiled = compiledKeys.get(debounce.key);
  if (compiled === undefined) {
    const result = compileKeyExpression(debounce.key);
    compiled = result.ok ? result.filter : result.error.message;
    if (compiledKeys.size >= 1_000) compiledKeys.clear();
    compiledKeys.set(debounce.key, compiled);
  }
  if (typeof compiled === 'string') return { error: `the key no longer compiles: ${compiled}` };
  const outcome = evaluateKey(compiled, envelope);
  return outcome.outcome === 'key' ? { key: outcome.key } : { error: outcome.message };
}
