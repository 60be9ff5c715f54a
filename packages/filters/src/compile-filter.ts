import { CelScalar, parse, plan, type CelType } from '@bufbuild/cel';
import { registerProgram, type CompiledFilter } from './compiled-filter';
import { ENVELOPE_VARIABLES, isEnvelopeVariable, type EnvelopeVariable } from './envelope-variables';
import {
  declaredResultTypes,
  filterEnv,
  isKnownFunction,
  LOOP_GUARD_FUNCTION,
  RANGE_METER_FUNCTION,
} from './filter-environment';
import { MAX_FILTER_AST_NODES, MAX_FILTER_EXPRESSION_LENGTH, MAX_FILTER_NESTING_DEPTH } from './filter-limits';
import { compileRegex, RegexRejectedError } from './safe-regex';

/** Why an expression was rejected. */
export interface FilterCompileError {
  /** One sentence naming the problem, e.g. `unknown variable 'amount'; …`. */
  readonly message: string;
  /** 0-based offset into the expression (UTF-16 code units) where the problem is, when known. */
  readonly position?: number;
}

/** The outcome of {@link compileFilter}. */
export type CompileFilterResult =
  { readonly ok: true; readonly filter: CompiledFilter } | { readonly ok: false; readonly error: FilterCompileError };

type ParsedExpr = ReturnType<typeof parse>;
type Expr = ParsedExpr['expr'];
type ExprKind = Expr['exprKind'];
type Comprehension = Extract<ExprKind, { case: 'comprehensionExpr' }>['value'];

/** Identifiers that name types, for `type(data.x) == string`. */
const TYPE_NAMES: ReadonlySet<string> = new Set([
  'bool',
  'bytes',
  'double',
  'int',
  'list',
  'map',
  'null_type',
  'string',
  'type',
  'uint',
]);

/** What the compiler can tell about an expression's result without running it. */
type StaticResult = 'bool' | 'not_bool' | 'unknown';

const BOOLEAN_OPERATORS: ReadonlySet<string> = new Set([
  '_&&_',
  '_||_',
  '@not_strictly_false',
  '__not_strictly_false__',
]);

const variableList = ENVELOPE_VARIABLES.join(', ');

class CompileError extends Error {
  constructor(
    message: string,
    readonly position: number | undefined,
  ) {
    super(message);
  }
}

/**
 * Compiles a CEL filter expression over the event envelope.
 *
 * Accepted: CEL's standard operators, functions and macros (`has`, `exists`,
 * `all`, `exists_one`, `map`, `filter`), reading only the envelope variables
 * (see {@link ENVELOPE_VARIABLES}) and names bound by macros. Rejected, with a
 * message and where known a position: syntax errors, unknown variables,
 * unknown functions, message construction, expressions that can never be a
 * boolean, and expressions over the size limits ({@link MAX_FILTER_EXPRESSION_LENGTH}
 * characters, {@link MAX_FILTER_AST_NODES} nodes, {@link MAX_FILTER_NESTING_DEPTH} levels).
 *
 * CEL is not JavaScript: nothing in an expression can reach `eval`, prototypes
 * or the host; the only callable things are the CEL standard functions.
 *
 * Never throws. Type errors that depend on the payload (`data.amount > 'x'`)
 * are not compile errors: `data` is dynamic, so they surface at evaluation.
 */
export function compileFilter(expression: string): CompileFilterResult {
  return compileWith(expression, 'filter');
}

/**
 * Compiles a CEL key expression (a concurrency key): the same variables,
 * functions and limits as a filter, but the result may be any value; see
 * `evaluateKey` for the values a key may take. Never throws.
 */
export function compileKeyExpression(expression: string): CompileFilterResult {
  return compileWith(expression, 'key');
}

/**
 * Compiles a CEL match expression (a trigger's `cancel_on` entry): a boolean
 * over two variables, `event` (the incoming event's envelope, as a map) and
 * `trigger` (the run's trigger: `trigger.event` is the envelope of the event
 * that started it), with a filter's functions and limits. Evaluate it with
 * `evaluateMatch`. Never throws.
 */
export function compileMatchExpression(expression: string): CompileFilterResult {
  return compileWith(expression, 'match');
}

/** The variables a match expression reads. */
export const MATCH_VARIABLES = ['event', 'trigger'] as const;

/** The variables a task's `if` and `for_each` read: the trigger event (and a batch's events), the run, and the results of earlier tasks. */
export const TASK_EXPRESSION_VARIABLES = ['event', 'events', 'run', 'tasks', 'input'] as const;

/**
 * Compiles a task's `if`: a boolean over {@link TASK_EXPRESSION_VARIABLES},
 * with a filter's functions and limits. Evaluate it with `evaluateTaskExpression`. Never throws.
 */
export function compileTaskCondition(expression: string): CompileFilterResult {
  return compileWith(expression, 'task_condition');
}

/**
 * Compiles a task's `for_each`: any value over {@link TASK_EXPRESSION_VARIABLES}
 * (that it is a list is checked when it runs), with a filter's functions and limits. Never throws.
 */
export function compileTaskList(expression: string): CompileFilterResult {
  return compileWith(expression, 'task_list');
}

type ExpressionKind = 'filter' | 'key' | 'match' | 'task_condition' | 'task_list';

/** Expressions that read named variables instead of the envelope's: the names and how to say so. */
const NAMED_VARIABLES: Partial<Record<ExpressionKind, { names: ReadonlySet<string>; hint: string }>> = {
  match: {
    names: new Set(MATCH_VARIABLES),
    hint: 'a match expression can read event and trigger (e.g. event.data.order_id == trigger.event.data.order_id)',
  },
  task_condition: {
    names: new Set(TASK_EXPRESSION_VARIABLES),
    hint: 'a task condition can read event, events (a batch), run, tasks and input (e.g. tasks.score.result.body.value < 0.5)',
  },
  task_list: {
    names: new Set(TASK_EXPRESSION_VARIABLES),
    hint: 'a for_each expression can read event, events (a batch), run, tasks and input (e.g. event.data.items)',
  },
};

function compileWith(expression: string, kind: ExpressionKind): CompileFilterResult {
  try {
    return { ok: true, filter: compile(expression, kind) };
  } catch (error) {
    if (error instanceof CompileError) {
      return {
        ok: false,
        error:
          error.position === undefined
            ? { message: error.message }
            : { message: error.message, position: error.position },
      };
    }
    if (error instanceof RangeError) {
      return {
        ok: false,
        error: { message: `the expression is nested too deeply (the limit is ${MAX_FILTER_NESTING_DEPTH} levels)` },
      };
    }
    return {
      ok: false,
      error: {
        message: `the expression could not be compiled: ${error instanceof Error ? error.message : String(error)}`,
      },
    };
  }
}

function compile(expression: string, kind: ExpressionKind): CompiledFilter {
  if (typeof expression !== 'string') throw new CompileError('the filter expression must be a string', undefined);
  if (expression.length > MAX_FILTER_EXPRESSION_LENGTH) {
    throw new CompileError(
      `the expression is ${expression.length} characters long; the limit is ${MAX_FILTER_EXPRESSION_LENGTH}`,
      MAX_FILTER_EXPRESSION_LENGTH,
    );
  }
  if (expression.trim() === '') throw new CompileError('the expression is empty', 0);

  const parsed = parseExpression(expression);
  const positions: Record<string, number> = { ...(parsed.sourceInfo?.positions ?? {}) };
  const checker = new Checker(positions, NAMED_VARIABLES[kind]);
  checker.visit(parsed.expr, new Set(), 1);
  if (kind !== 'key' && kind !== 'task_list' && checker.staticResult(parsed.expr, new Map()) === 'not_bool') {
    throw new CompileError(
      'a filter must evaluate to a boolean (true to match), but this expression never does',
      positions[String(parsed.expr.id)],
    );
  }
  const run = plan(filterEnv, parsed);
  return registerProgram(expression, {
    run: (bindings) => run(bindings as never),
    variables: checker.variables,
    positions,
  });
}

/** Parses, turning the parser's error into a message and an offset. */
function parseExpression(expression: string): ParsedExpr {
  try {
    return parse(expression);
  } catch (error) {
    if (error instanceof RangeError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    const offset = syntaxErrorOffset(error);
    throw new CompileError(`syntax error: ${message.replace(/^<input>:/, 'at ')}`, offset);
  }
}

function syntaxErrorOffset(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('location' in error)) return undefined;
  const location = error.location as { start?: { offset?: unknown } } | undefined;
  const offset = location?.start?.offset;
  return typeof offset === 'number' ? offset : undefined;
}

/**
 * Walks the parsed tree once: enforces the size limits, resolves every
 * identifier and function, records which envelope variables are read, and
 * wraps each macro's range in the range meter so evaluation is charged for
 * every pass a macro makes.
 */
class Checker {
  readonly variables = new Set<EnvelopeVariable>();
  private nodes = 0;
  private nextId: bigint;

  constructor(
    private readonly positions: Readonly<Record<string, number>>,
    /** Set when the expression reads these variables instead of the envelope's. */
    private readonly named?: { names: ReadonlySet<string>; hint: string },
  ) {
    // Ids of the nodes the checker adds only need to differ from the parser's;
    // macro expansion adds ids without positions, so leave a wide gap.
    let maxId = 0n;
    for (const id of Object.keys(positions)) if (BigInt(id) > maxId) maxId = BigInt(id);
    this.nextId = maxId + 1_000_000n;
  }

  private fail(message: string, expr: Expr): never {
    throw new CompileError(message, this.positions[String(expr.id)]);
  }

  /** Visits `expr` with `scope` holding the names macros have bound around it. Returns its node count. */
  visit(expr: Expr, scope: ReadonlySet<string>, depth: number): number {
    this.nodes += 1;
    if (this.nodes > MAX_FILTER_AST_NODES) {
      this.fail(
        `the expression is too large: more than ${MAX_FILTER_AST_NODES} syntax nodes after macro expansion`,
        expr,
      );
    }
    if (depth > MAX_FILTER_NESTING_DEPTH)
      this.fail(`the expression is nested too deeply (the limit is ${MAX_FILTER_NESTING_DEPTH} levels)`, expr);
    const before = this.nodes;
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'constExpr':
        break;
      case 'identExpr':
        this.resolveIdent(kind.value.name, scope, expr);
        break;
      case 'selectExpr':
        if (kind.value.operand === undefined) this.fail('invalid field selection', expr);
        this.visit(kind.value.operand, scope, depth + 1);
        break;
      case 'callExpr': {
        const call = kind.value;
        if (!isKnownFunction(call.function)) this.fail(`unknown function '${call.function}'`, expr);
        if (call.function === 'matches')
          this.checkLiteralPattern(call.target === undefined ? call.args[1] : call.args[0]);
        if (call.target !== undefined) this.visit(call.target, scope, depth + 1);
        for (const arg of call.args) this.visit(arg, scope, depth + 1);
        break;
      }
      case 'listExpr':
        for (const element of kind.value.elements) this.visit(element, scope, depth + 1);
        break;
      case 'structExpr':
        if (kind.value.messageName !== '')
          this.fail(`message construction (${kind.value.messageName}{…}) is not supported in filters`, expr);
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case !== 'mapKey' || entry.value === undefined) this.fail('invalid map literal', expr);
          this.visit(entry.keyKind.value, scope, depth + 1);
          this.visit(entry.value, scope, depth + 1);
        }
        break;
      case 'comprehensionExpr':
        this.visitComprehension(kind.value, scope, depth, expr);
        break;
      default:
        this.fail('unsupported expression', expr);
    }
    return this.nodes - before + 1;
  }

  /** A literal `matches()` pattern is compiled now, so a bad one fails registration, not every event. */
  private checkLiteralPattern(pattern: Expr | undefined): void {
    if (pattern?.exprKind.case !== 'constExpr' || pattern.exprKind.value.constantKind.case !== 'stringValue') return;
    try {
      compileRegex(pattern.exprKind.value.constantKind.value);
    } catch (error) {
      if (error instanceof RegexRejectedError) this.fail(error.message, pattern);
      throw error;
    }
  }

  private resolveIdent(name: string, scope: ReadonlySet<string>, expr: Expr): void {
    if (scope.has(name)) return;
    if (this.named !== undefined) {
      if (this.named.names.has(name) || TYPE_NAMES.has(name)) return;
      this.fail(`unknown variable '${name}'; ${this.named.hint}`, expr);
    }
    if (isEnvelopeVariable(name)) {
      this.variables.add(name);
      return;
    }
    if (TYPE_NAMES.has(name)) return;
    this.fail(`unknown variable '${name}'; a filter can read ${variableList}`, expr);
  }

  private visitComprehension(fold: Comprehension, scope: ReadonlySet<string>, depth: number, expr: Expr): void {
    const { iterRange, accuInit, loopCondition, loopStep, result } = fold;
    if (
      iterRange === undefined ||
      accuInit === undefined ||
      loopCondition === undefined ||
      loopStep === undefined ||
      result === undefined
    ) {
      this.fail('invalid macro', expr);
    }
    this.visit(iterRange, scope, depth + 1);
    this.visit(accuInit, scope, depth + 1);
    const inner = new Set(scope);
    inner.add(fold.iterVar);
    if (fold.iterVar2 !== '') inner.add(fold.iterVar2);
    inner.add(fold.accuVar);
    const bodySize = this.visit(loopCondition, inner, depth + 1) + this.visit(loopStep, inner, depth + 1);
    this.visit(result, new Set([...scope, fold.accuVar]), depth + 1);
    fold.iterRange = this.call(RANGE_METER_FUNCTION, [iterRange, this.intConstant(bodySize)]);
    fold.loopCondition = this.call(LOOP_GUARD_FUNCTION, [loopCondition]);
  }

  /** A call to one of the internal meter functions (see filter-environment.ts). */
  private call(name: string, args: Expr[]): Expr {
    return {
      $typeName: 'cel.expr.Expr',
      id: this.nextId++,
      exprKind: { case: 'callExpr', value: { $typeName: 'cel.expr.Expr.Call', function: name, args } },
    };
  }

  private intConstant(value: number): Expr {
    return {
      $typeName: 'cel.expr.Expr',
      id: this.nextId++,
      exprKind: {
        case: 'constExpr',
        value: { $typeName: 'cel.expr.Constant', constantKind: { case: 'int64Value', value: BigInt(value) } },
      },
    };
  }

  /**
   * What `expr` evaluates to, as far as can be told statically. `accumulators`
   * maps macro accumulator names to what their initial value tells.
   */
  staticResult(expr: Expr, accumulators: ReadonlyMap<string, StaticResult>): StaticResult {
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'constExpr':
        return kind.value.constantKind.case === 'boolValue' ? 'bool' : 'not_bool';
      case 'listExpr':
      case 'structExpr':
        return 'not_bool';
      case 'identExpr':
        if (accumulators.has(kind.value.name)) return accumulators.get(kind.value.name) ?? 'unknown';
        // Every envelope variable is a string, a timestamp or a map; so are the named variables.
        return isEnvelopeVariable(kind.value.name) || (this.named?.names.has(kind.value.name) ?? false)
          ? 'not_bool'
          : 'unknown';
      case 'selectExpr':
        return kind.value.testOnly ? 'bool' : 'unknown';
      case 'comprehensionExpr': {
        const { accuInit, result } = kind.value;
        if (accuInit === undefined || result === undefined) return 'unknown';
        const inner = new Map(accumulators).set(kind.value.accuVar, this.staticResult(accuInit, accumulators));
        return this.staticResult(result, inner);
      }
      case 'callExpr':
        return this.staticCallResult(kind.value.function, kind.value.args, accumulators);
      default:
        return 'unknown';
    }
  }

  private staticCallResult(
    name: string,
    args: readonly Expr[],
    accumulators: ReadonlyMap<string, StaticResult>,
  ): StaticResult {
    if (BOOLEAN_OPERATORS.has(name)) return 'bool';
    if (name === '_?_:_') {
      const [, whenTrue, whenFalse] = args;
      if (whenTrue === undefined || whenFalse === undefined) return 'unknown';
      const a = this.staticResult(whenTrue, accumulators);
      const b = this.staticResult(whenFalse, accumulators);
      return a === b ? a : 'unknown';
    }
    const results = declaredResultTypes(name);
    if (results === undefined || results.length === 0) return 'unknown';
    if (results.every((type) => type === CelScalar.BOOL)) return 'bool';
    if (results.every((type: CelType) => type !== CelScalar.BOOL && type !== CelScalar.DYN)) return 'not_bool';
    return 'unknown';
  }
}
