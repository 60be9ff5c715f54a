import { celType, isCelError } from '@bufbuild/cel';
import { programOf, type CompiledFilter } from './compiled-filter';
import { CostMeter, withMeter } from './cost-meter';
import { bindEnvelope, type FilterableEnvelope } from './envelope-variables';
import { MAX_FILTER_EVALUATION_COST } from './filter-limits';

/**
 * The outcome of evaluating a filter against one event.
 *
 * - `match`: the expression is `true`; the event routes to the activity.
 * - `no_match`: the expression is `false`.
 * - `error`: the expression has no boolean value for this event — it read a
 *   key the payload lacks (`data.missing.x`), applied an operator to the wrong
 *   types (`data.name > 1`), produced a non-boolean, or exceeded
 *   {@link MAX_FILTER_EVALUATION_COST}. The event does not route; callers should
 *   record the message so the operator can fix the filter or the sender.
 */
export type FilterOutcome =
  | { readonly outcome: 'match' }
  | { readonly outcome: 'no_match' }
  | {
      readonly outcome: 'error';
      /** What went wrong, e.g. `no such key: missing`. */
      readonly message: string;
      /** 0-based offset into the expression of the failing part, when known. */
      readonly position?: number;
    };

const MATCH: FilterOutcome = Object.freeze({ outcome: 'match' });
const NO_MATCH: FilterOutcome = Object.freeze({ outcome: 'no_match' });

/**
 * Evaluates a compiled filter against an event envelope. Never throws.
 *
 * Semantics are CEL's: reading a missing map key is an error, not `false`
 * (write `has(data.x) && data.x > 1` to test optional fields), and `&&` / `||`
 * absorb errors when the other side decides the result
 * (`false && data.missing` is `false`). Only the envelope fields the filter
 * reads are bound (see `ENVELOPE_VARIABLES` for their types).
 *
 * Evaluation is bounded: regular expressions run on a linear-time RE2 engine,
 * and a cost meter stops any evaluation after {@link MAX_FILTER_EVALUATION_COST}
 * units with an `error` outcome. The bound is counted, not timed, so the same
 * filter and event always give the same outcome.
 */
export function evaluateFilter(filter: CompiledFilter, envelope: FilterableEnvelope): FilterOutcome {
  const program = programOf(filter);
  if (program === undefined)
    return { outcome: 'error', message: 'not a compiled filter: use compileFilter() to make one' };
  const meter = new CostMeter(MAX_FILTER_EVALUATION_COST);
  try {
    const bindings = bindEnvelope(envelope, program.variables);
    const result = withMeter(meter, () => program.run(bindings));
    // Checked first: a `||` may have absorbed the error, but the result is void.
    if (meter.exhausted)
      return { outcome: 'error', message: `filter evaluation exceeded its cost limit of ${meter.limit} units` };
    if (isCelError(result)) {
      const position = result.exprId === undefined ? undefined : program.positions[String(result.exprId)];
      return position === undefined
        ? { outcome: 'error', message: result.message }
        : { outcome: 'error', message: result.message, position };
    }
    if (result === true) return MATCH;
    if (result === false) return NO_MATCH;
    return {
      outcome: 'error',
      message: `a filter must evaluate to a boolean, but this one evaluated to a ${celType(result).name}`,
    };
  } catch (error) {
    return { outcome: 'error', message: error instanceof Error ? error.message : String(error) };
  }
}
