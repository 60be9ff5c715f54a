import {
  compileTaskCondition,
  compileTaskList,
  evaluateTaskExpression,
  type TaskExpressionBindings,
  type TaskExpressionOutcome,
} from '@activity-core/filters';
import { TASK_GRAPH_LIMITS } from '@activity-core/contracts/task-graph';

export interface EvaluateTaskExpressionInput {
  /** `condition`: a task's `if` (a boolean); `list`: its `for_each` (a list). */
  kind: 'condition' | 'list';
  expression: string;
  bindings: TaskExpressionBindings;
}

/**
 * A task's `if` and `for_each`, evaluated in the worker (the CEL engine is not
 * workflow code). The answer is recorded in the run's history, so replay
 * decides alike; an evaluation error is an answer too, never a retry.
 */
export function createTaskExpressionEffects() {
  return {
    async evaluateTaskExpression(input: EvaluateTaskExpressionInput): Promise<TaskExpressionOutcome> {
      const compiled =
        input.kind === 'condition' ? compileTaskCondition(input.expression) : compileTaskList(input.expression);
      if (!compiled.ok) return { outcome: 'error', message: compiled.error.message };
      const outcome = evaluateTaskExpression(compiled.filter, input.bindings);
      if (outcome.outcome === 'error') return outcome;
      if (input.kind === 'condition' && typeof outcome.value !== 'boolean')
        return {
          outcome: 'error',
          message: `an if expression must evaluate to a boolean, but this one evaluated to ${JSON.stringify(outcome.value)?.slice(0, 100)}`,
        };
      if (input.kind === 'list') {
        if (!Array.isArray(outcome.value))
          return { outcome: 'error', message: 'a for_each expression must evaluate to a list' };
        // Bounded here, before the answer is recorded in the run's history.
        if (outcome.value.length > TASK_GRAPH_LIMITS.maxForEachItems)
          return {
            outcome: 'error',
            message: `the expression gave ${outcome.value.length} items; the limit is ${TASK_GRAPH_LIMITS.maxForEachItems}`,
          };
        const size = JSON.stringify(outcome.value).length;
        if (size > TASK_GRAPH_LIMITS.maxForEachResultBytes)
          return {
            outcome: 'error',
            message: `the list is ${size} characters of JSON; the limit is ${TASK_GRAPH_LIMITS.maxForEachResultBytes}`,
          };
      }
      return outcome;
    },
  };
}
