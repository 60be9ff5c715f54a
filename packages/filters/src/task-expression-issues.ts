import { compileTaskCondition, compileTaskList, type CompileFilterResult } from './compile-filter';

/** One task expression that does not compile: the field, the compiler's sentence, and where in the text. */
export interface TaskExpressionIssue {
  readonly path: string;
  readonly message: string;
  readonly code: 'invalid_expression';
}

const TASK_EXPRESSION_FIELDS: ReadonlyArray<readonly ['if' | 'for_each', (expression: string) => CompileFilterResult]> =
  [
    ['if', compileTaskCondition],
    ['for_each', compileTaskList],
  ];

/**
 * Compiles every task's `if` and `for_each` as registration does: each one
 * that does not compile (syntax, unknown variable, over the size limits, a
 * condition that is never a boolean) is an issue naming `tasks[i].if` or
 * `tasks[i].for_each`, with the position when the compiler knows it.
 */
export function taskExpressionIssues(definition: {
  readonly tasks: ReadonlyArray<{ readonly if?: string | undefined; readonly for_each?: string | undefined }>;
}): TaskExpressionIssue[] {
  const issues: TaskExpressionIssue[] = [];
  definition.tasks.forEach((task, index) => {
    for (const [field, compile] of TASK_EXPRESSION_FIELDS) {
      const expression = task[field];
      if (expression === undefined) continue;
      const compiled = compile(expression);
      if (compiled.ok) continue;
      const at = compiled.error.position === undefined ? '' : ` (at position ${compiled.error.position})`;
      issues.push({
        path: `tasks[${index}].${field}`,
        message: `${compiled.error.message}${at}`,
        code: 'invalid_expression',
      });
    }
  });
  return issues;
}
