import { celType, isCelError, isCelList, isCelMap, isCelUint, type CelValue } from '@bufbuild/cel';
import { programOf, type CompiledFilter } from './compiled-filter';
import { CostMeter, withMeter } from './cost-meter';
import { MAX_FILTER_EVALUATION_COST } from './filter-limits';

/** What a task's `if` and `for_each` see: plain JSON values. */
export interface TaskExpressionBindings {
  /** The trigger event's envelope; `{}` for runs not started by an event. */
  readonly event: Record<string, unknown>;
  /** The run: run_id, workflow_id, trigger_type, scheduled_for… */
  readonly run: Record<string, unknown>;
  /** The settled tasks this one may read, by key and by index: `{ status, result }`. */
  readonly tasks: Record<string, unknown>;
  /** A called run's input (`run_activity`); `{}` for other runs. */
  readonly input: Record<string, unknown>;
  /** The run of a batch: its events' envelopes in arrival order; `[]` (absent) for other runs. */
  readonly events?: ReadonlyArray<Record<string, unknown>>;
}

/** The value of a task expression as JSON, or why there is none. */
export type TaskExpressionOutcome =
  { readonly outcome: 'value'; readonly value: unknown } | { readonly outcome: 'error'; readonly message: string };

/**
 * Evaluates a compiled task expression (`compileTaskCondition` or
 * `compileTaskList`) under a filter's counted cost budget. The value comes
 * back as plain JSON (CEL ints as numbers when they are safe integers, as
 * strings otherwise); a value with no JSON form is an `error`. Never throws.
 */
export function evaluateTaskExpression(
  expression: CompiledFilter,
  bindings: TaskExpressionBindings,
): TaskExpressionOutcome {
  const program = programOf(expression);
  if (program === undefined) return { outcome: 'error', message: 'not a compiled task expression' };
  const meter = new CostMeter(MAX_FILTER_EVALUATION_COST);
  try {
    const result = withMeter(meter, () =>
      program.run({
        event: bindings.event,
        events: bindings.events ?? [],
        run: bindings.run,
        tasks: bindings.tasks,
        input: bindings.input,
      }),
    );
    if (meter.exhausted)
      return { outcome: 'error', message: `the expression exceeded its cost limit of ${meter.limit} units` };
    if (isCelError(result)) return { outcome: 'error', message: result.message };
    return { outcome: 'value', value: toJson(result as CelValue) };
  } catch (error) {
    return { outcome: 'error', message: error instanceof Error ? error.message : String(error) };
  }
}

class NotJsonError extends Error {}

/**
 * Values one result may hold, nested ones included. CEL builds lists lazily
 * within its cost budget, but converting a result walks every value: a
 * cheap expression such as `l.map(x, l.map(y, l))` yields far more values
 * than it cost, so the walk has a budget of its own.
 */
export const MAX_TASK_EXPRESSION_VALUES = 200_000;

function toJson(value: CelValue): unknown {
  let values = 0;
  const stack: Array<{ from: CelValue; put: (json: unknown) => void }> = [];
  let root: unknown;
  stack.push({ from: value, put: (json) => (root = json) });
  while (stack.length > 0) {
    const { from, put } = stack.pop()!;
    if (++values > MAX_TASK_EXPRESSION_VALUES)
      throw new NotJsonError(
        `the expression's value holds more than ${MAX_TASK_EXPRESSION_VALUES} values; that is the limit`,
      );
    if (from === null || typeof from === 'string' || typeof from === 'boolean') put(from);
    else if (typeof from === 'number') put(Number.isFinite(from) ? from : String(from));
    else if (typeof from === 'bigint') put(Number.isSafeInteger(Number(from)) ? Number(from) : String(from));
    else if (isCelUint(from)) put(Number.isSafeInteger(Number(from.value)) ? Number(from.value) : String(from.value));
    else if (isCelList(from)) {
      const out: unknown[] = new Array<unknown>(from.size);
      put(out);
      let index = 0;
      for (const item of from) {
        const at = index++;
        stack.push({ from: item, put: (json) => (out[at] = json) });
      }
    } else if (isCelMap(from)) {
      const out: Record<string, unknown> = {};
      put(out);
      for (const [key, item] of from) {
        const name = typeof key === 'object' ? String(key.value) : String(key);
        stack.push({
          from: item,
          put: (json) =>
            Object.defineProperty(out, name, { value: json, enumerable: true, writable: true, configurable: true }),
        });
      }
    } else throw new NotJsonError(`the expression evaluated to a ${celType(from).name}, which has no JSON form`);
  }
  return root;
}
