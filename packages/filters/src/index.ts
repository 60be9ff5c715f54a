/**
 * Event-trigger filters: CEL expressions over the event envelope, validated at
 * registration and evaluated at routing without running arbitrary code or
 * hanging.
 *
 * Terminology
 * - filter expression: the CEL source an operator registers on an event trigger.
 * - compiled filter: an expression that passed validation and is ready to run.
 * - outcome: `match`, `no_match`, or `error` (no boolean value for this event).
 * - cost: the counted work of one evaluation, capped so none can run long.
 */
export {
  compileFilter,
  compileKeyExpression,
  compileMatchExpression,
  compileTaskCondition,
  compileTaskList,
  MATCH_VARIABLES,
  TASK_EXPRESSION_VARIABLES,
} from './compile-filter';
export { evaluateTaskExpression } from './evaluate-task-expression';
export type { TaskExpressionBindings, TaskExpressionOutcome } from './evaluate-task-expression';
export type { CompileFilterResult, FilterCompileError } from './compile-filter';
export type { CompiledFilter } from './compiled-filter';
export { ENVELOPE_VARIABLES } from './envelope-variables';
export type { EnvelopeVariable, FilterableEnvelope } from './envelope-variables';
export { evaluateFilter } from './evaluate-filter';
export type { FilterOutcome } from './evaluate-filter';
export { evaluateKey, MAX_KEY_LENGTH } from './evaluate-key';
export { evaluateMatch } from './evaluate-match';
export type { MatchBindings, MatchBudget } from './evaluate-match';
export type { KeyOutcome } from './evaluate-key';
export { definitionExpressionIssues, EXPRESSION_COMPILERS } from './definition-expressions';
export type { ExpressionIssue } from './definition-expressions';
export {
  MAX_FILTER_AST_NODES,
  MAX_FILTER_EVALUATION_COST,
  MAX_FILTER_EXPRESSION_LENGTH,
  MAX_FILTER_NESTING_DEPTH,
} from './filter-limits';
