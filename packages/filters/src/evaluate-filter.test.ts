import type { FilterableEnvelope } from './envelope-variables';
import { describe, expect, test } from 'vitest';
import { compileFilter } from './compile-filter';
import type { CompiledFilter } from './compiled-filter';
import { evaluateFilter } from './evaluate-filter';

function envelope(overrides: Partial<FilterableEnvelope> = {}): FilterableEnvelope {
  return {
    event_id: 'evt_1',
    event_type: 'order.created',
    source: 'shop',
    occurred_at: '2026-03-01T09:00:00+02:00',
    subject: 'orders/42',
    data: {},
    ...overrides,
  };
}

function compiled(expression: string): CompiledFilter {
  const result = compileFilter(expression);
  if (!result.ok) throw new Error(`${expression}: ${result.error.message}`);
  return result.filter;
}

function evaluate(expression: string, overrides: Partial<FilterableEnvelope> = {}) {
  return evaluateFilter(compiled(expression), envelope(overrides));
}

function timed<T>(run: () => T): { result: T; ms: number } {
  const start = performance.now();
  const result = run();
  return { result, ms: performance.now() - start };
}

describe('evaluateFilter: matching', () => {
  test('a filter on data.amount > 100 matches an order of 150', () => {
    expect(evaluate('data.amount > 100', { data: { amount: 150 } })).toEqual({ outcome: 'match' });
  });

  test('a filter on data.amount > 100 does not match an order of 50', () => {
    expect(evaluate('data.amount > 100', { data: { amount: 50 } })).toEqual({ outcome: 'no_match' });
  });

  test('a filter reads event_type, source and subject from the envelope', () => {
    const filter = "event_type == 'order.created' && source == 'shop' && subject == 'orders/42'";
    expect(evaluate(filter)).toEqual({ outcome: 'match' });
    expect(evaluate(filter, { source: 'other' })).toEqual({ outcome: 'no_match' });
  });

  test("an event without a subject has subject '' so presence is a comparison", () => {
    expect(evaluate("subject != ''", { subject: undefined })).toEqual({ outcome: 'no_match' });
    expect(evaluate("subject != ''")).toEqual({ outcome: 'match' });
  });

  test('startsWith, endsWith and contains test strings', () => {
    const filter = "subject.startsWith('orders/') && data.email.endsWith('@example.com') && data.note.contains('gift')";
    expect(evaluate(filter, { data: { email: 'ana@example.com', note: 'a gift for Bo' } })).toEqual({
      outcome: 'match',
    });
    expect(evaluate(filter, { data: { email: 'ana@example.org', note: 'a gift for Bo' } })).toEqual({
      outcome: 'no_match',
    });
  });

  test('in tests membership of a list literal and of a payload list', () => {
    expect(evaluate("data.country in ['DE', 'AT', 'CH']", { data: { country: 'AT' } })).toEqual({ outcome: 'match' });
    expect(evaluate("data.country in ['DE', 'AT', 'CH']", { data: { country: 'FR' } })).toEqual({
      outcome: 'no_match',
    });
    expect(evaluate("'vip' in data.tags", { data: { tags: ['new', 'vip'] } })).toEqual({ outcome: 'match' });
  });

  test('has() guards an optional field: absent is no match rather than an error', () => {
    const filter = 'has(data.discount) && data.discount > 10';
    expect(evaluate(filter, { data: {} })).toEqual({ outcome: 'no_match' });
    expect(evaluate(filter, { data: { discount: 15 } })).toEqual({ outcome: 'match' });
  });

  test('exists and all range over lists in the payload', () => {
    const data = {
      items: [
        { sku: 'A-1', qty: 1 },
        { sku: 'B-2', qty: 3 },
      ],
    };
    expect(evaluate("data.items.exists(item, item.sku == 'B-2')", { data })).toEqual({ outcome: 'match' });
    expect(evaluate('data.items.all(item, item.qty >= 2)', { data })).toEqual({ outcome: 'no_match' });
  });

  test('a regular expression matches with RE2 syntax', () => {
    const filter = "data.id.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')";
    expect(evaluate(filter, { data: { id: '123e4567-e89b-12d3-a456-426614174000' } })).toEqual({ outcome: 'match' });
    expect(evaluate(filter, { data: { id: 'not-a-uuid' } })).toEqual({ outcome: 'no_match' });
  });

  test('type() tells what a payload value is', () => {
    expect(
      evaluate('type(data.amount) == double && type(data.name) == string && type(data.tags) == list', {
        data: { amount: 1, name: 'a', tags: [] },
      }),
    ).toEqual({
      outcome: 'match',
    });
  });

  test('JSON numbers are doubles: they compare with int literals, and integer-only operators need int()', () => {
    expect(evaluate('data.count == 4', { data: { count: 4 } })).toEqual({ outcome: 'match' });
    expect(evaluate('int(data.count) % 2 == 0', { data: { count: 4 } })).toEqual({ outcome: 'match' });
    expect(evaluate('data.count % 2 == 0', { data: { count: 4 } })).toMatchObject({ outcome: 'error' });
  });
});

describe('evaluateFilter: occurred_at is a timestamp', () => {
  test('occurred_at compares by instant, whatever offset the sender used', () => {
    // 09:00 at +02:00 is 07:00 UTC.
    expect(evaluate("occurred_at == timestamp('2026-03-01T07:00:00Z')")).toEqual({ outcome: 'match' });
    expect(evaluate("occurred_at < timestamp('2026-03-01T08:00:00+01:00')")).toEqual({ outcome: 'no_match' });
  });

  test('occurred_at keeps nanoseconds', () => {
    const occurred_at = '2026-03-01T07:00:00.123456789Z';
    expect(evaluate("occurred_at == timestamp('2026-03-01T07:00:00.123456789Z')", { occurred_at })).toEqual({
      outcome: 'match',
    });
    expect(evaluate("occurred_at > timestamp('2026-03-01T07:00:00.123456788Z')", { occurred_at })).toEqual({
      outcome: 'match',
    });
  });

  test('occurred_at supports durations and time-zone accessors', () => {
    expect(evaluate("occurred_at + duration('1h') == timestamp('2026-03-01T08:00:00Z')")).toEqual({ outcome: 'match' });
    expect(evaluate("occurred_at.getHours('Europe/Berlin') == 8 && occurred_at.getHours() == 7")).toEqual({
      outcome: 'match',
    });
  });

  test('a filter that does not read occurred_at is not bothered by a malformed one', () => {
    expect(evaluate("source == 'shop'", { occurred_at: 'yesterday' })).toEqual({ outcome: 'match' });
    expect(evaluate("occurred_at > timestamp('2026-01-01T00:00:00Z')", { occurred_at: 'yesterday' })).toEqual({
      outcome: 'error',
      message: 'occurred_at is not an RFC 3339 date-time: "yesterday"',
    });
  });
});

describe('evaluateFilter: errors are outcomes, never exceptions', () => {
  test('reading a missing key is an error, with the position of the read', () => {
    expect(evaluate('data.customer.tier == 1', { data: {} })).toEqual({
      outcome: 'error',
      message: 'field not found: customer',
      position: 4,
    });
  });

  test('comparing values of different types is an error', () => {
    expect(evaluate("data.amount > 'many'", { data: { amount: 150 } })).toEqual({
      outcome: 'error',
      message: "found no matching overload for '_>_' applied to '(double, string)'",
      position: 12,
    });
  });

  test('a result that is not a boolean is an error', () => {
    expect(evaluate('data.amount', { data: { amount: 150 } })).toEqual({
      outcome: 'error',
      message: 'a filter must evaluate to a boolean, but this one evaluated to a double',
    });
  });

  test('&& and || follow CEL: an error on one side is absorbed when the other side decides', () => {
    expect(evaluate('data.missing > 1 && false')).toEqual({ outcome: 'no_match' });
    expect(evaluate('data.missing > 1 || true')).toEqual({ outcome: 'match' });
    expect(evaluate('data.missing > 1 || false')).toMatchObject({ outcome: 'error' });
  });

  test('prototype properties of the payload are not readable', () => {
    expect(evaluate('has(data.constructor) || has(data.__proto__) || has(data.toString)')).toEqual({
      outcome: 'no_match',
    });
    expect(evaluate("data.constructor == ''")).toMatchObject({
      outcome: 'error',
      message: 'field not found: constructor',
    });
  });

  test('a filter object not made by compileFilter is an error', () => {
    const forged = { expression: 'true' } as unknown as CompiledFilter;
    expect(evaluateFilter(forged, envelope())).toEqual({
      outcome: 'error',
      message: 'not a compiled filter: use compileFilter() to make one',
    });
  });
});

describe('evaluateFilter: evaluation cannot hang', () => {
  test("the catastrophic pattern '^(a+)+$' against 34 a's and a '!' returns promptly", () => {
    const { result, ms } = timed(() => evaluate("data.s.matches('^(a+)+$')", { data: { s: `${'a'.repeat(34)}!` } }));
    expect(result).toEqual({ outcome: 'no_match' });
    // A backtracking engine takes minutes here; RE2 takes microseconds.
    expect(ms).toBeLessThan(500);
  });

  test('a regular expression taken from the payload is size-checked before it is compiled', () => {
    expect(evaluate('data.s.matches(data.pattern)', { data: { s: 'abc', pattern: '(\\pL{1000}|x)' } })).toMatchObject({
      outcome: 'error',
      message: expect.stringMatching(/^regular expression is too complex/),
    });
  });

  test('a nested loop over a large payload stops at the cost limit instead of running for hours', () => {
    const data = { ids: Array.from({ length: 200_000 }, (_, i) => i) };
    const { result, ms } = timed(() => evaluate('data.ids.exists(a, data.ids.exists(b, a == b + 0.5))', { data }));
    expect(result).toEqual({ outcome: 'error', message: 'filter evaluation exceeded its cost limit of 5000000 units' });
    expect(ms).toBeLessThan(2_000);
  });

  test('a string doubled through a chain of macros stops at the cost limit', () => {
    const doubling = Array.from({ length: 40 }, () => '.map(x, x + x)').join('');
    const { result, ms } = timed(() => evaluate(`[data.s]${doubling}.size() == 1`, { data: { s: 'abcdefgh' } }));
    expect(result).toMatchObject({ outcome: 'error', message: expect.stringMatching(/cost limit/) });
    expect(ms).toBeLessThan(2_000);
  });

  test('an exhausted budget is an error even when || would have absorbed it', () => {
    const row = Array.from({ length: 100_000 }, (_, i) => i);
    const data = { rows: Array.from({ length: 100 }, () => row) };
    expect(evaluate('data.rows.exists(r, r.exists(x, x < 0)) || true', { data })).toMatchObject({
      outcome: 'error',
      message: expect.stringMatching(/cost limit/),
    });
  });
});
