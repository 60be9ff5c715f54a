import { describe, expect, test } from 'vitest';
import { ActivityDefinition } from './activity-definition';

const valid = {
  name: 'order-paid-sync',
  triggers: [{ type: 'event', event_type: 'order.paid' }],
  tasks: [{ type: 'http', config: { url: 'https://example.test/hook' } }, { type: 'noop' }],
};

function issues(input: unknown): Array<{ path: string; message: string }> {
  const result = ActivityDefinition.safeParse(input);
  if (result.success) return [];
  return result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}

describe('activity definitions', () => {
  test('a minimal event-triggered definition is valid and gets its defaults', () => {
    const parsed = ActivityDefinition.parse(valid);
    expect(parsed.enabled).toBe(true);
    expect(parsed.tasks[0]).toMatchObject({ type: 'http', config: { method: 'POST', timeout: '30s', headers: {} }, continue_on_failure: false });
    expect(parsed.tasks[1]).toMatchObject({ type: 'noop', config: {} });
  });

  test('an unknown trigger type is refused with the list of known types', () => {
    expect(issues({ ...valid, triggers: [{ type: 'webhook', event_type: 'x' }] })).toEqual([
      { path: 'triggers.0.type', message: 'trigger type must be one of: event, cron' },
    ]);
  });

  test('an unknown task type is refused with the list of known types', () => {
    expect(issues({ ...valid, tasks: [{ type: 'shell', config: {} }] })[0]?.message).toBe(
      'task type must be one of: http, delay, emit_event, noop',
    );
  });

  test('a definition with no tasks is refused', () => {
    expect(issues({ ...valid, tasks: [] })[0]?.path).toBe('tasks');
  });

  test('unknown fields are refused rather than silently dropped', () => {
    expect(issues({ ...valid, retries: 3 })[0]?.message).toMatch(/retries/);
  });

  test('a dedupe_key_strategy that differs from the cron misfire_policy is refused naming the field', () => {
    const result = issues({
      ...valid,
      dedupe_key_strategy: 'skip',
      triggers: [{ type: 'cron', cron: '0 9 * * MON-FRI', misfire_policy: 'catchup' }],
    });
    expect(result).toEqual([
      { path: 'dedupe_key_strategy', message: expect.stringContaining('must equal the misfire_policy "catchup"') },
    ]);
  });

  test('dedupe_key_strategy is derived from the cron triggers when omitted', () => {
    const parsed = ActivityDefinition.parse({ ...valid, triggers: [{ type: 'cron', cron: '*/5 * * * *', misfire_policy: 'compress' }] });
    expect(parsed.dedupe_key_strategy).toBe('compress');
  });

  test('cron triggers of one activity with different policies are refused', () => {
    const result = issues({
      ...valid,
      triggers: [
        { type: 'cron', cron: '0 9 * * *', misfire_policy: 'skip' },
        { type: 'cron', cron: '0 10 * * *', misfire_policy: 'catchup' },
      ],
    });
    expect(result[0]?.path).toBe('triggers');
  });

  test('an invalid cron expression is refused naming the cron field', () => {
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '61 * * * *' }] })[0]?.path).toBe('triggers.0.cron');
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '* * *' }] })[0]).toEqual({
      path: 'triggers.0.cron',
      message: 'cron must have 5 or 6 fields, got 3',
    });
  });

  test('an unknown timezone is refused naming the timezone field', () => {
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '0 9 * * *', timezone: 'Mars/Olympus' }] })).toEqual([
      { path: 'triggers.0.timezone', message: 'unknown IANA timezone: Mars/Olympus' },
    ]);
  });

  test('six-field cron expressions with seconds are accepted', () => {
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '*/2 * * * * *', timezone: 'Europe/Paris' }] })).toEqual([]);
  });

  test('event type patterns allow exact types and prefix wildcards only', () => {
    expect(issues({ ...valid, triggers: [{ type: 'event', event_type: 'order.*' }] })).toEqual([]);
    expect(issues({ ...valid, triggers: [{ type: 'event', event_type: 'order.*.paid' }] })[0]?.path).toBe('triggers.0.event_type');
  });

  test('an emit_event task must emit a type the ingress would accept', () => {
    expect(issues({ ...valid, tasks: [{ type: 'emit_event', config: { event_type: 'has spaces' } }] })[0]?.path).toBe('tasks.0.config.event_type');
    expect(issues({ ...valid, tasks: [{ type: 'emit_event', config: { event_type: 'order.shipped' } }] })).toEqual([]);
  });

  test('durations must carry a unit', () => {
    expect(issues({ ...valid, tasks: [{ type: 'delay', config: { duration: '30' } }] })[0]?.path).toBe('tasks.0.config.duration');
    expect(issues({ ...valid, tasks: [{ type: 'delay', config: { duration: '30s' } }] })).toEqual([]);
  });
});
