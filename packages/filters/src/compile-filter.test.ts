import { describe, expect, test } from 'vitest';
import { compileFilter } from './compile-filter';
import { MAX_FILTER_AST_NODES, MAX_FILTER_EXPRESSION_LENGTH, MAX_FILTER_NESTING_DEPTH } from './filter-limits';

function compileError(expression: string) {
  const result = compileFilter(expression);
  if (result.ok) throw new Error(`expected ${expression} not to compile`);
  return result.error;
}

describe('compileFilter', () => {
  test('a filter over every envelope variable compiles and remembers its expression', () => {
    const expression =
      "event_id != '' && event_type == 'order.created' && source == 'shop' && subject.startsWith('orders/') && occurred_at > timestamp('2026-01-01T00:00:00Z') && data.amount > 100";
    const result = compileFilter(expression);
    expect(result.ok).toBe(true);
    expect(result.ok && result.filter.expression).toBe(expression);
  });

  test('the standard macros compile, and the names they bind are not unknown variables', () => {
    for (const expression of [
      'has(data.customer)',
      "data.items.exists(item, item.sku == 'A-1')",
      'data.items.all(item, item.qty > 0)',
      "data.items.exists_one(item, item.sku == 'A-1')",
      'data.items.map(item, item.qty).exists(qty, qty > 10)',
      'data.items.filter(item, item.qty > 10).size() > 0',
      'data.orders.exists(order, order.lines.exists(line, line.sku == order.sku))',
    ]) {
      expect(compileFilter(expression), expression).toMatchObject({ ok: true });
    }
  });

  test('a syntax error is a compile error with its position', () => {
    const error = compileError('data.amount >');
    expect(error.message).toMatch(/^syntax error/);
    expect(error.position).toBeTypeOf('number');
  });

  test('an empty expression is a compile error', () => {
    expect(compileError('  ').message).toBe('the expression is empty');
  });

  test('an unknown variable is a compile error naming it and the variables a filter can read', () => {
    const error = compileError("amount > 100 && data.currency == 'EUR'");
    expect(error).toEqual({
      message: "unknown variable 'amount'; a filter can read event_id, event_type, source, subject, occurred_at, data",
      position: 0,
    });
  });

  test('a macro variable is not visible outside its macro', () => {
    expect(compileError('data.items.exists(item, true) && item.qty > 1').message).toMatch(/unknown variable 'item'/);
  });

  test('an unknown function or method is a compile error', () => {
    expect(compileError("data.name.lowerAscii() == 'x'")).toEqual({
      message: "unknown function 'lowerAscii'",
      position: 9,
    });
    expect(compileError('now() > occurred_at').message).toBe("unknown function 'now'");
  });

  test(`an expression longer than ${MAX_FILTER_EXPRESSION_LENGTH} characters is a compile error`, () => {
    const expression = Array.from({ length: 200 }, (_, i) => `event_type == 'type-${i}'`).join(' || ');
    expect(expression.length).toBeGreaterThan(MAX_FILTER_EXPRESSION_LENGTH);
    expect(compileError(expression).message).toBe(
      `the expression is ${expression.length} characters long; the limit is ${MAX_FILTER_EXPRESSION_LENGTH}`,
    );
  });

  test(`an expression of more than ${MAX_FILTER_AST_NODES} syntax nodes after macro expansion is a compile error`, () => {
    const expression = Array.from({ length: 110 }, () => '[].all(x, x)').join(' && ');
    expect(expression.length).toBeLessThanOrEqual(MAX_FILTER_EXPRESSION_LENGTH);
    expect(compileError(expression).message).toMatch(/too large/);
  });

  test(`an expression nested more than ${MAX_FILTER_NESTING_DEPTH} levels deep is a compile error`, () => {
    expect(
      compileError(`${'int('.repeat(MAX_FILTER_NESTING_DEPTH + 10)}1${')'.repeat(MAX_FILTER_NESTING_DEPTH + 10)} == 1`)
        .message,
    ).toMatch(/nested too deeply/);
    expect(compileError(`${'['.repeat(600)}${']'.repeat(600)} == []`).message).toMatch(/nested too deeply/);
  });

  test('an expression that can never be a boolean is a compile error', () => {
    for (const expression of [
      'data.amount + 1',
      'event_id',
      "'match'",
      '[true]',
      'data.items.map(x, x)',
      'size(data.items)',
    ]) {
      expect(compileError(expression).message, expression).toMatch(/must evaluate to a boolean/);
    }
  });

  test('constructing protobuf messages is a compile error', () => {
    expect(compileError('google.protobuf.Timestamp{seconds: 0} < occurred_at').message).toMatch(/message construction/);
  });

  test('JavaScript escape hatches do not compile: CEL has no prototypes, eval or globals', () => {
    for (const expression of [
      "constructor.constructor('return process')()",
      "data.constructor.constructor('return process')() == 1",
      "this.constructor == ''",
      'process.exit(1) == 1',
      "globalThis.eval('1') == 1",
      "eval('1 + 1') == 2",
      "require('child_process') == null",
      "import('fs') == null",
      '`${process.env}` == 1',
    ]) {
      expect(compileFilter(expression), expression).toMatchObject({ ok: false });
    }
  });

  test('a malformed literal regular expression is a compile error at the pattern', () => {
    expect(compileError("data.name.matches('[a-z')")).toMatchObject({
      message: expect.stringMatching(/^invalid regular expression/),
      position: 18,
    });
  });

  test('a literal regular expression that would compile to a huge program is a compile error', () => {
    expect(compileError("data.name.matches('\\\\pL{1000}')").message).toMatch(/regular expression is too complex/);
  });

  test('compileFilter never throws, even when handed something that is not a string', () => {
    expect(compileFilter(42 as unknown as string)).toEqual({
      ok: false,
      error: { message: 'the filter expression must be a string' },
    });
  });
});
