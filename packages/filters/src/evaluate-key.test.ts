import { describe, expect, test } from 'vitest';
import { compileFilter, compileKeyExpression } from './compile-filter';
import type { FilterableEnvelope } from './envelope-variables';
import { evaluateKey, MAX_KEY_LENGTH } from './evaluate-key';

function envelope(data: Record<string, unknown>): FilterableEnvelope {
  return {
    event_id: 'evt_1',
    event_type: 'order.created',
    source: 'shop',
    occurred_at: '2026-03-01T09:00:00Z',
    subject: 'orders/42',
    data,
  };
}

function key(expression: string, data: Record<string, unknown> = {}) {
  const compiled = compileKeyExpression(expression);
  if (!compiled.ok) throw new Error(`${expression}: ${compiled.error.message}`);
  return evaluateKey(compiled.filter, envelope(data));
}

describe('compileKeyExpression', () => {
  test('accepts an expression that is not a boolean, which a filter refuses', () => {
    expect(compileKeyExpression('data.customer').ok).toBe(true);
    expect(compileKeyExpression('source + "/" + subject').ok).toBe(true);
    expect(compileFilter('"constant"').ok).toBe(false);
    expect(compileKeyExpression('"constant"').ok).toBe(true);
  });

  test('refuses unknown variables and syntax errors like a filter does', () => {
    const unknown = compileKeyExpression('event.data.customer');
    expect(unknown.ok).toBe(false);
    if (!unknown.ok) expect(unknown.error.message).toContain("unknown variable 'event'");
    expect(compileKeyExpression('data.customer +').ok).toBe(false);
  });
});

describe('evaluateKey', () => {
  test('a string value is the key as it is', () => {
    expect(key('data.customer', { customer: 'acme' })).toEqual({ outcome: 'key', key: 'acme' });
  });

  test('numbers and booleans are keys by their text', () => {
    expect(key('data.n', { n: 7 })).toEqual({ outcome: 'key', key: '7' });
    expect(key('int(data.n)', { n: 7 })).toEqual({ outcome: 'key', key: '7' });
    expect(key('data.vip', { vip: true })).toEqual({ outcome: 'key', key: 'true' });
  });

  test('a missing field is an error with CEL’s message, never a throw', () => {
    const outcome = key('data.customer', {});
    expect(outcome.outcome).toBe('error');
    if (outcome.outcome === 'error') expect(outcome.message).toContain('customer');
  });

  test('a list, a map or null is not a key', () => {
    expect(key('data.tags', { tags: ['a'] })).toMatchObject({
      outcome: 'error',
      message: expect.stringContaining('must evaluate to a string'),
    });
    expect(key('data.obj', { obj: { a: 1 } })).toMatchObject({ outcome: 'error' });
    expect(key('data.none', { none: null })).toMatchObject({ outcome: 'error' });
  });

  test('a key longer than the limit is an error rather than a truncated (possibly shared) key', () => {
    expect(key('data.customer', { customer: 'x'.repeat(MAX_KEY_LENGTH + 1) })).toMatchObject({
      outcome: 'error',
      message: expect.stringContaining(`limit is ${MAX_KEY_LENGTH}`),
    });
  });

  test('an evaluation over the cost limit is an error', () => {
    const big = Array.from({ length: 2000 }, (_, index) => index);
    const outcome = key('string(data.xs.map(x, data.xs.map(y, x + y)).size())', { xs: big });
    expect(outcome).toMatchObject({ outcome: 'error', message: expect.stringContaining('cost limit') });
  });
});
