import { isCelList, isCelMap, type CelValue } from '@bufbuild/cel';

/** Thrown (inside CEL, where it becomes a CEL error) when an evaluation runs out of budget. */
export class FilterCostExceededError extends Error {
  readonly code = 'filter_cost_exceeded';

  constructor(readonly limit: number) {
    super(`filter evaluation exceeded its cost limit of ${limit} units`);
    this.name = 'FilterCostExceededError';
  }
}

/**
 * Counts what one evaluation spends. Charges are made before the work they pay
 * for, so a filter that would run long stops at the first operation it cannot
 * afford.
 */
export class CostMeter {
  private spent = 0;

  /** @param limit units one evaluation may spend */
  constructor(readonly limit: number) {}

  /** Units still available. */
  get remaining(): number {
    return Math.max(0, this.limit - this.spent);
  }

  /** True once any charge has been refused; the evaluation's result is then void. */
  get exhausted(): boolean {
    return this.spent > this.limit;
  }

  /** Spends `units`; throws {@link FilterCostExceededError} once over the limit. */
  charge(units: number): void {
    this.spent += units;
    if (this.spent > this.limit) throw new FilterCostExceededError(this.limit);
  }
}

/*
 * CEL evaluation is synchronous, so "the meter of the evaluation in progress" is
 * well defined without threading a context through the library.
 */
let activeMeter: CostMeter | undefined;

/** Runs `evaluate` with `meter` receiving every charge made by the metered functions. */
export function withMeter<T>(meter: CostMeter, evaluate: () => T): T {
  const previous = activeMeter;
  const previousStackTraceLimit = Error.stackTraceLimit;
  activeMeter = meter;
  // CEL errors are values: `||`, `&&` and macros may create and drop one per
  // element, and once the budget is spent every charge fails. Capturing a stack
  // trace for each would cost far more than the work the meter counts, and no
  // one reads them. Evaluation is synchronous, so nothing else sees the change.
  Error.stackTraceLimit = 0;
  try {
    return evaluate();
  } finally {
    activeMeter = previous;
    Error.stackTraceLimit = previousStackTraceLimit;
  }
}

/** Charges the evaluation in progress, if any. */
export function charge(units: number): void {
  activeMeter?.charge(units);
}

/** Units still available to the evaluation in progress (unbounded outside one). */
export function remainingBudget(): number {
  return activeMeter?.remaining ?? Number.POSITIVE_INFINITY;
}

/** Characters, bytes, or top-level elements of a value: what most operations touch. O(1). */
export function shallowSize(value: CelValue | undefined): number {
  if (typeof value === 'string' || value instanceof Uint8Array) return value.length;
  if (isCelList(value) || isCelMap(value)) return value.size;
  return 0;
}

/**
 * Size of a value counting nested elements, as deep equality touches them.
 * Stops counting once past `cap`, so measuring costs no more than the budget
 * it is measured against.
 */
export function deepSize(value: CelValue | undefined, cap: number): number {
  let total = 0;
  const pending: (CelValue | undefined)[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    total += 1 + shallowSize(next);
    // Checked before expanding, so a huge list past the cap is never walked.
    if (total > cap) break;
    if (isCelList(next)) {
      for (const element of next) pending.push(element);
    } else if (isCelMap(next)) {
      for (const element of next.values()) pending.push(element);
    }
  }
  return total;
}
