import {
  celEnv,
  celFunc,
  celMethod,
  CelScalar,
  isCelError,
  type CelEnv,
  type CelFunc,
  type CelInput,
  type CelValue,
} from '@bufbuild/cel';
import { charge, deepSize, remainingBudget, shallowSize } from './cost-meter';
import { compileRegex } from './safe-regex';

/**
 * The CEL environment filters are planned against: CEL's standard library
 * only (no extensions, no protobuf message types beyond the well-known ones),
 * with every function metered, plus the two internal meter functions the
 * compiler wraps around parts of each macro.
 *
 * `matches()` runs on `@bufbuild/re2`, a linear-time RE2 engine (no
 * backtracking), with pattern size bounded (see safe-regex.ts), so no pattern
 * can make a match hang.
 */

/*
 * Internal functions the compiler wraps around parts of every macro. Their
 * names start with `@`, which the CEL grammar does not allow in identifiers, so
 * no expression can call them directly.
 */

/** Wraps a macro's range: charges the whole pass over it up front. */
export const RANGE_METER_FUNCTION = '@activity_core_range';

/** Wraps a macro's loop condition: stops the loop once the budget is spent. */
export const LOOP_GUARD_FUNCTION = '@activity_core_continue';

/** Operators the planner evaluates itself rather than resolving as functions. */
const PLANNER_OPERATORS: ReadonlySet<string> = new Set([
  '_&&_',
  '_||_',
  '_?_:_',
  '_[_]',
  '_[?_]',
  '_?._',
  '@not_strictly_false',
  '__not_strictly_false__',
]);

/** Functions whose work grows with nested elements, not just top-level size. */
const DEEP_FUNCTIONS: ReadonlySet<string> = new Set(['_==_', '_!=_', '@in']);

/**
 * Conversions that parse a string as a big integer first (`int('…')`,
 * `uint('…')`): the parse grows faster than the string, so a megabyte of digits
 * is charged far more than a megabyte; a real int64 (≤ 20 digits) costs nothing extra.
 */
const INTEGER_PARSES: ReadonlySet<string> = new Set(['int', 'uint']);
const INTEGER_PARSE_QUADRATIC_DIVISOR = 10_000;

/** What a call costs before it runs: 1, plus the size of everything it reads. */
function callCost(name: string, target: CelValue | undefined, args: readonly CelValue[]): number {
  const operands = target === undefined ? args : [target, ...args];
  const [first] = operands;
  if (INTEGER_PARSES.has(name) && typeof first === 'string') {
    return 1 + first.length + Math.floor((first.length * first.length) / INTEGER_PARSE_QUADRATIC_DIVISOR);
  }
  if (DEEP_FUNCTIONS.has(name)) {
    let units = 1;
    for (const operand of operands) units += deepSize(operand, remainingBudget());
    return units;
  }
  let units = 1;
  for (const operand of operands) units += shallowSize(operand);
  return units;
}

/** Wraps a library function so each call is charged to the evaluation in progress. */
function metered(fn: CelFunc): CelFunc {
  const invoke = (target: CelValue | undefined, args: CelValue[]): CelInput => {
    charge(callCost(fn.name, target, args));
    const result = fn.call(0, target, args);
    // Re-thrown as a plain Error so the library attaches the caller's expression id.
    if (result === undefined) throw new Error(`found no matching overload for '${fn.name}'`);
    if (isCelError(result)) throw new Error(result.message);
    return result as CelInput;
  };
  if (fn.target === undefined) {
    return celFunc(fn.name, fn.arguments, fn.result, (...args: CelValue[]) => invoke(undefined, args));
  }
  return celMethod(fn.name, fn.target, fn.arguments, fn.result, function (this: CelValue, ...args: CelValue[]) {
    return invoke(this, args);
  });
}

/**
 * `@activity_core_range(range, bodySize)`: charges a macro's pass over `range`
 * (its size times the size of the macro body, which runs once per element)
 * and returns the range unchanged.
 */
const rangeMeter = celFunc(RANGE_METER_FUNCTION, [CelScalar.DYN, CelScalar.INT], CelScalar.DYN, (range, bodySize) => {
  charge(shallowSize(range) * (1 + Number(bodySize)));
  return range as CelInput;
});

/**
 * `@activity_core_continue(condition)`: passes the loop condition through until
 * the budget is spent, then fails it, which ends the loop at once. Without it a
 * loop whose body absorbs errors (`exists`, `all`) would keep iterating after
 * the budget ran out, each pass failing again.
 */
const loopGuard = celFunc(LOOP_GUARD_FUNCTION, [CelScalar.BOOL], CelScalar.BOOL, (condition) => {
  charge(0);
  return condition;
});

/**
 * RE2's time per text character grows with the compiled program (each live
 * instruction is stepped per character in the worst case). Measured here, one
 * unit per text character per 4 instructions keeps a match's charge in line
 * with its time.
 */
const REGEX_INSTRUCTIONS_PER_UNIT = 4;

/**
 * `string.matches(string)`, replacing the library's own: the same RE2 engine,
 * but patterns are size-checked before compiling and cached once compiled, and
 * the match is charged for the text times the program size.
 */
const matches = celMethod(
  'matches',
  CelScalar.STRING,
  [CelScalar.STRING],
  CelScalar.BOOL,
  function (this: string, pattern: string) {
    charge(1 + pattern.length);
    const regex = compileRegex(pattern);
    charge(this.length * Math.ceil(regex.re2Input.prog.numInst() / REGEX_INSTRUCTIONS_PER_UNIT));
    return regex.test(this);
  },
);

const standard = celEnv();

/** The environment every filter is planned against. */
export const filterEnv: CelEnv = celEnv({
  funcs: [...[...standard.funcs].filter((fn) => fn.name !== 'matches').map(metered), matches, rangeMeter, loopGuard],
});

/** True if `name` is a function or operator a filter may call. */
export function isKnownFunction(name: string): boolean {
  return (
    name !== RANGE_METER_FUNCTION &&
    name !== LOOP_GUARD_FUNCTION &&
    (PLANNER_OPERATORS.has(name) || filterEnv.funcs.find(name) !== undefined)
  );
}

/**
 * Result types the library declares for `name` across its overloads, or
 * `undefined` for operators the planner evaluates itself.
 */
export function declaredResultTypes(name: string): readonly CelFunc['result'][] | undefined {
  const group = standard.funcs.find(name);
  return group === undefined ? undefined : [...group].map((fn) => fn.result);
}
