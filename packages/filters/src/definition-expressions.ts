import type { FieldIssue } from '@activity-core/contracts';
import {
  DEFINITION_EXPRESSION_SITES,
  expressionsAt,
  fieldPath,
  MAX_EXPRESSION_LENGTH,
  type ExpressionKind,
  type ExpressionSite,
} from '@activity-core/contracts/expressions';
import {
  compileFilter,
  compileKeyExpression,
  compileMatchExpression,
  compileTaskCondition,
  compileTaskList,
  type CompileFilterResult,
} from './compile-filter';

/** The compiler of each expression kind: a new kind does not compile until it has one. */
export const EXPRESSION_COMPILERS: Readonly<Record<ExpressionKind, (expression: string) => CompileFilterResult>> = {
  filter: compileFilter,
  match: compileMatchExpression,
  key: compileKeyExpression,
  task_condition: compileTaskCondition,
  task_list: compileTaskList,
};

/** A compile error at an expression site: the FieldIssue the API answers with, and where in the expression. */
export interface ExpressionIssue extends FieldIssue {
  /** 0-based offset into the expression where the problem is, when known. */
  readonly position?: number;
}

/**
 * Compiles every expression a parsed definition holds (see
 * DEFINITION_EXPRESSION_SITES) and returns one issue per expression that does
 * not compile, in the order of the definition's fields: the field path
 * (`triggers[0].filter`), the compiler's message, code `custom`. An expression
 * over the length limit is the schema's refusal, not compiled again here.
 *
 * The API runs this on every definition it is asked to store (a 400 naming
 * the field), the CLI on every definition file before it sends one.
 */
export function definitionExpressionIssues(
  definition: unknown,
  sites: readonly ExpressionSite[] = DEFINITION_EXPRESSION_SITES,
): ExpressionIssue[] {
  const issues: ExpressionIssue[] = [];
  for (const { path, kind, expression } of expressionsAt(definition, sites)) {
    if (expression.length > MAX_EXPRESSION_LENGTH) continue;
    const compiled = EXPRESSION_COMPILERS[kind](expression);
    if (compiled.ok) continue;
    issues.push({
      path: fieldPath(path),
      message: compiled.error.message,
      code: 'custom',
      ...(compiled.error.position === undefined ? {} : { position: compiled.error.position }),
    });
  }
  return issues;
}
