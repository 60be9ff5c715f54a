import type { EventEnvelope, Trigger } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { decideForActivity, eventTriggerMatches, eventTypeMatches, selfTriggerIssues } from './matching';

const envelope = (event_type: string, source = 'shop', data: Record<string, unknown> = {}): EventEnvelope => ({
  event_id: 'e1',
  event_type,
  source,
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

describe('event type patterns', () => {
  test('an exact pattern matches only the same type', () => {
    expect(eventTypeMatches('order.paid', 'order.paid')).toBe(true);
    expect(eventTypeMatches('order.paid', 'order.paid.v2')).toBe(false);
    expect(eventTypeMatches('order.paid', 'order')).toBe(false);
  });

  test('a prefix wildcard matches every type below the prefix', () => {
    expect(eventTypeMatches('order.*', 'order.paid')).toBe(true);
    expect(eventTypeMatches('order.*', 'order.refund.created')).toBe(true);
  });

  test('a prefix wildcard does not match the bare prefix or a longer word', () => {
    expect(eventTypeMatches('order.*', 'order')).toBe(false);
    expect(eventTypeMatches('order.*', 'orders.paid')).toBe(false);
  });

  test('a lone star matches everything', () => {
    expect(eventTypeMatches('*', 'anything.at.all')).toBe(true);
  });
});

describe('event triggers', () => {
  test('a trigger with a source matches only events from that source', () => {
    const trigger = { type: 'event' as const, event_type: 'order.paid', source: 'shop' };
    expect(eventTriggerMatches(trigger, envelope('order.paid', 'shop'))).toBe(true);
    expect(eventTriggerMatches(trigger, envelope('order.paid', 'billing'))).toBe(false);
  });

  test('cron triggers never match events', () => {
    const triggers: Trigger[] = [
      {
        type: 'cron',
        cron: '* * * * *',
        timezone: 'UTC',
        misfire_policy: 'skip',
        max_catchup: 10,
        misfire_grace: '60s',
      },
    ];
    expect(decideForActivity(triggers, envelope('order.paid'))).toBeUndefined();
  });

  test('an activity with two matching triggers still matches once', () => {
    const triggers: Trigger[] = [
      { type: 'event', event_type: 'order.*' },
      { type: 'event', event_type: 'order.paid' },
    ];
    expect(decideForActivity(triggers, envelope('order.paid'))).toEqual({ outcome: 'pending' });
  });
});

describe('trigger filters', () => {
  const paid = (filter?: string): Trigger => ({
    type: 'event',
    event_type: 'order.paid',
    ...(filter === undefined ? {} : { filter }),
  });
  const order = envelope('order.paid', 'shop', { amount: 250, currency: 'EUR' });

  test('a filter that is true for the event lets it start a run', () => {
    expect(decideForActivity([paid('data.amount > 100')], order)).toEqual({ outcome: 'pending' });
  });

  test('a filter that is false records the event as filtered and names the filter', () => {
    expect(decideForActivity([paid('data.amount > 1000')], order)).toEqual({
      outcome: 'filtered',
      detail: 'filter `data.amount > 1000` is false',
    });
  });

  test('a filter that fails on the event is a filter_error carrying the evaluation error', () => {
    const decision = decideForActivity([paid('data.customer.tier == "gold"')], order);
    expect(decision?.outcome).toBe('filter_error');
    expect((decision as { detail: string }).detail).toMatch(
      /^filter `data.customer.tier == "gold"` failed: .*customer/,
    );
  });

  test('a filter is not consulted for events its trigger does not match by type', () => {
    expect(decideForActivity([paid('data.customer.tier == "gold"')], envelope('order.refunded'))).toBeUndefined();
  });

  test('one matching trigger without a filter is enough, whatever other triggers filter', () => {
    expect(decideForActivity([paid('data.amount > 1000'), { type: 'event', event_type: 'order.*' }], order)).toEqual({
      outcome: 'pending',
    });
  });

  test('when one filter fails and another is false the outcome is filter_error naming both', () => {
    const decision = decideForActivity([paid('data.amount > 1000'), paid('data.missing > 1')], order);
    expect(decision).toMatchObject({ outcome: 'filter_error' });
    expect((decision as { detail: string }).detail).toContain('`data.missing > 1` failed');
    expect((decision as { detail: string }).detail).toContain('`data.amount > 1000` is false');
  });

  test('a stored filter that no longer compiles stops the event with a filter_error instead of throwing', () => {
    expect(decideForActivity([paid('data.amount >')], order)).toMatchObject({
      outcome: 'filter_error',
      detail: expect.stringContaining('no longer compiles'),
    });
  });
});

describe('definitions whose emit_event tasks trigger the definition itself', () => {
  const emit = (event_type: string, source?: string) => ({
    type: 'emit_event' as const,
    continue_on_failure: false,
    config: { event_type, source: source ?? 'activity-core', data: {} },
  });
  const on = (event_type: string, source?: string): Trigger => ({
    type: 'event',
    event_type,
    ...(source === undefined ? {} : { source }),
  });

  test('an emit of a type one of its own triggers matches is reported at the task path', () => {
    const issues = selfTriggerIssues({
      triggers: [on('other'), on('loop.*')],
      tasks: [{ type: 'noop', continue_on_failure: false, config: {} }, emit('loop.again')],
    });
    expect(issues).toHaveLength(1);
    expect(issues[0]?.path).toBe('tasks[1].config.event_type');
    expect(issues[0]?.message).toContain('triggers[1]');
    expect(issues[0]?.message).toContain('allow_self_trigger');
  });

  test('a trigger restricted to another source does not count as a self-trigger', () => {
    expect(selfTriggerIssues({ triggers: [on('loop', 'shop')], tasks: [emit('loop')] })).toEqual([]);
    expect(selfTriggerIssues({ triggers: [on('loop', 'mine')], tasks: [emit('loop', 'mine')] })).toHaveLength(1);
  });

  test('emitting a type no trigger matches is fine', () => {
    expect(selfTriggerIssues({ triggers: [on('order.*')], tasks: [emit('invoice.sent')] })).toEqual([]);
  });

  test('allow_self_trigger lets the definition through', () => {
    expect(selfTriggerIssues({ triggers: [on('*')], tasks: [emit('anything')], allow_self_trigger: true })).toEqual([]);
  });
});
