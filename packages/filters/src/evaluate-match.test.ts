import { describe, expect, it } from 'vitest';
import { compileMatchExpression } from './compile-filter';
import { evaluateMatch } from './evaluate-match';

const envelope = (data: Record<string, unknown>, event_type = 'order.created') => ({
  event_id: 'e-1',
  event_type,
  source: 'shop',
  occurred_at: '2026-01-01T00:00:00Z',
  data,
});

function compiled(expression: string) {
  const result = compileMatchExpression(expression);
  if (!result.ok) throw new Error(result.error.message);
  return result.filter;
}

describe('match expressions (cancel_on)', () => {
  it('match when the incoming event and the run trigger share the correlated field', () => {
    const expression = compiled('event.data.order_id == trigger.event.data.order_id');
    expect(
      evaluateMatch(expression, {
        event: envelope({ order_id: 'A' }, 'order.cancelled'),
        trigger: { event: envelope({ order_id: 'A' }) },
      }),
    ).toEqual({ outcome: 'match' });
    expect(
      evaluateMatch(expression, {
        event: envelope({ order_id: 'B' }, 'order.cancelled'),
        trigger: { event: envelope({ order_id: 'A' }) },
      }),
    ).toEqual({ outcome: 'no_match' });
  });

  it('report a missing key as an error rather than a match', () => {
    const expression = compiled('event.data.order_id == trigger.event.data.order_id');
    expect(
      evaluateMatch(expression, { event: envelope({}), trigger: { event: envelope({ order_id: 'A' }) } }).outcome,
    ).toBe('error');
  });

  it('reject the envelope variables of a filter and name the variables a match expression can read', () => {
    const result = compileMatchExpression('data.order_id == "A"');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain('can read event and trigger');
  });

  it('reject expressions that can never be a boolean', () => {
    expect(compileMatchExpression('event.data').ok).toBe(true);
    expect(compileMatchExpression('"text"').ok).toBe(false);
  });
});

describe('match expressions under a caller’s budget', () => {
  it('report what an evaluation spent, and stop one at a limit lower than the filters’', () => {
    const expression = compiled('event.data.items.exists(i, i == "needle")');
    const bindings = {
      event: envelope({ items: Array.from({ length: 10_000 }, (_, i) => `item-${i}`) }),
      trigger: { event: envelope({}) },
    };
    let spent = 0;
    expect(evaluateMatch(expression, bindings, { spent: (units) => (spent = units) }).outcome).toBe('no_match');
    expect(spent).toBeGreaterThan(10_000);
    const cut = evaluateMatch(expression, bindings, { limit: 1_000, spent: (units) => (spent = units) });
    expect(cut).toMatchObject({ outcome: 'error', message: expect.stringContaining('cost limit of 1000') });
    expect(spent).toBe(1_000);
  });
});
