import { z } from 'zod';
import { compileFilter, type CompileFilterResult } from './compile-filter';
import { MAX_FILTER_EXPRESSION_LENGTH } from './filter-limits';

/**
 * A filter expression field for definition schemas: a string that
 * {@link compileFilter} accepts. A rejected expression adds one `custom` issue
 * at the field's path carrying the compile error's message (and its
 * `position` in `params`), so registration answers 400 naming the field.
 *
 * The length limit is also declared as `max` so generated JSON Schema and
 * OpenAPI show it; an over-long expression gets that one issue, not two.
 */
export const FilterExpression = compiledExpression('filter', compileFilter).meta({
  description:
    'A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) that must be true for the event to start a run, e.g. `data.amount > 100 && subject.startsWith("orders/")`.',
});
/** A filter expression that compiles. */
export type FilterExpression = z.infer<typeof FilterExpression>;

/**
 * A CEL expression field that `compile` must accept (filters, `cancel_on` and
 * `wait_for_event` match expressions): bounded by the filter length limit, a
 * compile error as one `custom` issue at the field's path, with its position.
 * `noun` names it in the length message ("a filter expression may be at most …").
 */
export function compiledExpression(noun: string, compile: (expression: string) => CompileFilterResult) {
  return z
    .string()
    .max(
      MAX_FILTER_EXPRESSION_LENGTH,
      `a ${noun} expression may be at most ${MAX_FILTER_EXPRESSION_LENGTH} characters long`,
    )
    .superRefine((expression, ctx) => {
      if (expression.length > MAX_FILTER_EXPRESSION_LENGTH) return;
      const compiled = compile(expression);
      if (compiled.ok) return;
      ctx.addIssue({
        code: 'custom',
        message: compiled.error.message,
        input: expression,
        ...(compiled.error.position === undefined ? {} : { params: { position: compiled.error.position } }),
      });
    });
}
