import { celType, isCelError } from '@bufbuild/cel';
import { programOf, type CompiledFilter } from './compiled-filter';
import { CostMeter, withMeter } from './cost-meter';
import type { FilterableEnvelope } from './envelope-variables';
import type { FilterOutcome } from './evaluate-filter';
import { MAX_FILTER_EVALUATION_COST } from './filter-limits';

/** What a match expression sees: the incoming event, and the trigger of the run it may concern. */
export interface MatchBindings {
  /** The incoming event's envelope; `occurred_at` is its RFC 3339 text, `subject` is `''` when absent. */
  readonly event: FilterableEnvelope;
  /** The run's trigger: `event` is the envelope of the event that started the run. */
  readonly trigger: { readonly event: FilterableEnvelope };
}

const asMap = (envelope: FilterableEnvelope): Record<string, unknown> => ({
  event_id: envelope.event_id,
  event_type: envelope.event_type,
  source: envelope.source,
  subject: envelope.subject ?? '',
  occurred_at: envelope.occurred_at,
  data: envelope.data,
});

/** How much one match evaluation may spend, and where to report what it spent. */
export interface MatchBudget {
  /** Units this evaluation may spend (at most, and by default, MAX_FILTER_EVALUATION_COST). */
  readonly limit?: number;
  /** Told the units spent (the whole limit when it ran out), so a caller can bound many evaluations together. */
  readonly spent?: (units: number) => void;
}

/**
 * Evaluates a compiled match expression (`compileMatchExpression`) under the
 * same counted cost budget and CEL semantics as a filter (a missing key is an
 * `error`, not `false`). Never throws.
 */
export function evaluateMatch(
  expression: CompiledFilter,
  bindings: MatchBindings,
  budget: MatchBudget = {},
): FilterOutcome {
  const program = programOf(expression);
  if (program === undefined)
    return { outcome: 'error', message: 'not a compiled expression: use compileMatchExpression() to make one' };
  const meter = new CostMeter(Math.min(budget.limit ?? MAX_FILTER_EVALUATION_COST, MAX_FILTER_EVALUATION_COST));
  try {
    const bound = { event: asMap(bindings.event), trigger: { event: asMap(bindings.trigger.event) } };
    const result = withMeter(meter, () => program.run(bound));
    if (meter.exhausted)
      return { outcome: 'error', message: `match evaluation exceeded its cost limit of ${meter.limit} units` };
    if (isCelError(result)) {
      const position = result.exprId === undefined ? undefined : program.positions[String(result.exprId)];
      return position === undefined
        ? { outcome: 'error', message: result.message }
        : { outcome: 'error', message: result.message, position };
    }
    if (result === true) return { outcome: 'match' };
    if (result === false) return { outcome: 'no_match' };
    return {
      outcome: 'error',
      message: `a match expression must evaluate to a boolean, but this one evaluated to a ${celType(result).name}`,
    };
  } catch (error) {
    return { outcome: 'error', message: error instanceof Error ? error.message : String(error) };
  } finally {
    budget.spent?.(meter.limit - meter.remaining);
  }
}
