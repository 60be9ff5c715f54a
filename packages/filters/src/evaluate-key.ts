import { celType, isCelError } from '@bufbuild/cel';
import { programOf, type CompiledFilter } from './compiled-filter';
import { CostMeter, withMeter } from './cost-meter';
import { bindEnvelope, type FilterableEnvelope } from './envelope-variables';
import { MAX_FILTER_EVALUATION_COST } from './filter-limits';

/** Longest key value: a longer one is an error rather than silently cut (two keys must never merge). */
export const MAX_KEY_LENGTH = 500;

/**
 * The outcome of evaluating a key expression against one event: the key as a
 * string, or why there is none. Strings are taken as they are; integers,
 * doubles and booleans by their CEL text (`42`, `1.5`, `true`). Anything else
 * (null, a list, a map, a timestamp), an evaluation error, a key longer than
 * {@link MAX_KEY_LENGTH} or an evaluation over the cost limit is an `error`.
 */
export type KeyOutcome =
  { readonly outcome: 'key'; readonly key: string } | { readonly outcome: 'error'; readonly message: string };

/**
 * Evaluates a compiled key expression (`compileKeyExpression`) against an
 * event envelope under the same counted cost budget as a filter. Never throws.
 */
export function evaluateKey(expression: CompiledFilter, envelope: FilterableEnvelope): KeyOutcome {
  const program = programOf(expression);
  if (program === undefined)
    return { outcome: 'error', message: 'not a compiled expression: use compileKeyExpression() to make one' };
  const meter = new CostMeter(MAX_FILTER_EVALUATION_COST);
  try {
    const bindings = bindEnvelope(envelope, program.variables);
    const result = withMeter(meter, () => program.run(bindings));
    if (meter.exhausted)
      return { outcome: 'error', message: `key evaluation exceeded its cost limit of ${meter.limit} units` };
    if (isCelError(result)) return { outcome: 'error', message: result.message };
    let key: string;
    if (typeof result === 'string') key = result;
    else if (typeof result === 'bigint' || typeof result === 'boolean') key = String(result);
    else if (typeof result === 'number' && Number.isFinite(result)) key = String(result);
    else
      return {
        outcome: 'error',
        message: `a key must evaluate to a string, int, double or bool, but this one evaluated to a ${celType(result).name}`,
      };
    if (key.length > MAX_KEY_LENGTH)
      return { outcome: 'error', message: `the key is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}` };
    return { outcome: 'key', key };
  } catch (error) {
    return { outcome: 'error', message: error instanceof Error ? error.message : String(error) };
  }
}
