import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { FilterExpression } from './filter-expression-schema';
import { MAX_FILTER_EXPRESSION_LENGTH } from './filter-limits';

const Trigger = z.object({ event_type: z.string(), filter: FilterExpression.optional() });

describe('FilterExpression', () => {
  test('a valid expression passes unchanged', () => {
    expect(Trigger.parse({ event_type: 'order.created', filter: 'data.amount > 100' })).toEqual({
      event_type: 'order.created',
      filter: 'data.amount > 100',
    });
  });

  test("an invalid expression fails with one issue at the field's path carrying the compile error", () => {
    const result = Trigger.safeParse({ event_type: 'order.created', filter: 'amount > 100' });
    expect(result.success).toBe(false);
    expect(result.error?.issues).toEqual([
      expect.objectContaining({
        code: 'custom',
        path: ['filter'],
        message:
          "unknown variable 'amount'; a filter can read event_id, event_type, source, subject, occurred_at, data",
        params: { position: 0 },
      }),
    ]);
  });

  test('an over-long expression fails with exactly one issue', () => {
    const result = Trigger.safeParse({ event_type: 'order.created', filter: `${'true && '.repeat(300)}true` });
    expect(result.error?.issues).toEqual([
      expect.objectContaining({ code: 'too_big', path: ['filter'], maximum: MAX_FILTER_EXPRESSION_LENGTH }),
    ]);
  });

  test('the generated JSON Schema declares the length limit', () => {
    expect(z.toJSONSchema(FilterExpression)).toMatchObject({ type: 'string', maxLength: MAX_FILTER_EXPRESSION_LENGTH });
  });
});
