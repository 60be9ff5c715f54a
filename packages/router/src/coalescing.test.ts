import {
  ActivityDefinition,
  coalesceWindowWorkflowId,
  parseCoalesceWindowWorkflowId,
  type EventEnvelope,
} from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { batchBytesOf, batchFor, debounceFor, debounceKeyOf } from './coalescing';

const envelope = (data: Record<string, unknown>, event_type = 'contact.updated'): EventEnvelope => ({
  event_id: 'evt_1',
  event_type,
  source: 'crm',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

const definition = (triggers: unknown[]) =>
  ActivityDefinition.parse({ name: 'd', triggers, tasks: [{ type: 'noop' }] });

describe('which debounce an event falls under', () => {
  test("the matching trigger's debounce, with max_wait defaulting to the 7 d bound", () => {
    const plan = debounceFor(
      definition([{ type: 'event', event_type: 'contact.*', debounce: { period: '2s' } }]),
      envelope({}),
    );
    expect(plan).toMatchObject({ periodMs: 2_000, maxWaitMs: 7 * 86_400_000, debounce: { mode: 'trailing' } });
  });

  test('none when the trigger that decided the event has no debounce, even if a later trigger has one', () => {
    const plan = debounceFor(
      definition([
        { type: 'event', event_type: 'contact.updated', filter: 'data.vip == true' },
        { type: 'event', event_type: 'contact.updated', debounce: { period: '1s' } },
      ]),
      envelope({ vip: true }),
    );
    expect(plan).toBeUndefined();
  });

  test('a trigger whose filter rejects the event is passed over for the next matching one', () => {
    const plan = debounceFor(
      definition([
        { type: 'event', event_type: 'contact.updated', filter: 'data.vip == true' },
        { type: 'event', event_type: 'contact.updated', debounce: { period: '1s', max_wait: '5s' } },
      ]),
      envelope({ vip: false }),
    );
    expect(plan?.maxWaitMs).toBe(5_000);
  });

  test('a definition without any debounce is not evaluated at all', () => {
    expect(debounceFor(definition([{ type: 'event', event_type: 'contact.updated' }]), envelope({}))).toBeUndefined();
  });
});

describe('the debounce key', () => {
  test('no key expression is the activity-wide key ""', () => {
    expect(debounceKeyOf({ period: '1s', mode: 'trailing' }, envelope({}))).toEqual({ key: '' });
  });

  test("the expression's value over the event, numbers by their CEL text", () => {
    expect(
      debounceKeyOf({ key: 'data.contact', period: '1s', mode: 'trailing' }, envelope({ contact: 'c-1' })),
    ).toEqual({ key: 'c-1' });
    expect(debounceKeyOf({ key: 'data.n', period: '1s', mode: 'trailing' }, envelope({ n: 42 }))).toEqual({
      key: '42',
    });
  });

  test('an expression that fails on the event is an error (the event then runs alone)', () => {
    expect(debounceKeyOf({ key: 'data.contact', period: '1s', mode: 'trailing' }, envelope({}))).toHaveProperty(
      'error',
    );
  });
});

describe('the window workflow id', () => {
  const activity = '0b9f4a52-4a3e-4a4e-9a55-0d9f1c3b2a10';
  const window = '5f0c1c66-1f0e-4b7e-8d8e-2b0f1f5d9a01';

  test('names the activity, a hash of the key and the window; a key cannot change its structure', () => {
    const id = coalesceWindowWorkflowId(activity, 'x:y/../coalesce-evil\n', window);
    expect(id).toMatch(/^coalesce-[0-9a-f-]{36}:[0-9a-f]{32}:[0-9a-f-]{36}$/);
    expect(parseCoalesceWindowWorkflowId(id)).toMatchObject({ activityId: activity, windowId: window });
    expect(coalesceWindowWorkflowId(activity, 'a', window)).not.toBe(coalesceWindowWorkflowId(activity, 'b', window));
  });

  test('parses nothing that is not one', () => {
    expect(parseCoalesceWindowWorkflowId(`activity-${activity}:evt_1`)).toBeUndefined();
  });
});

describe('debounce bounds on write', () => {
  const issues = (debounce: object) => {
    const result = ActivityDefinition.safeParse({
      name: 'd',
      triggers: [{ type: 'event', event_type: 'x.y', debounce }],
      tasks: [{ type: 'noop' }],
    });
    return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  };

  test('period from 1 s to 7 d; max_wait at least the period and at most 7 d', () => {
    expect(issues({ period: '1s', max_wait: '7d' })).toEqual([]);
    expect(issues({ period: '999ms' })).toEqual(['triggers.0.debounce.period: must be at least 1s and at most 7d']);
    expect(issues({ period: '8d' })).toEqual(['triggers.0.debounce.period: must be at least 1s and at most 7d']);
    expect(issues({ period: '10s', max_wait: '5s' })).toEqual([
      'triggers.0.debounce.max_wait: max_wait must be at least the period',
    ]);
    expect(issues({ period: '1s', max_wait: '8d' })).toEqual([
      'triggers.0.debounce.max_wait: must be at least 1s and at most 7d',
    ]);
  });

  test('trailing and leading modes are accepted, and unknown fields are refused', () => {
    expect(issues({ period: '1s', mode: 'leading' })).toEqual([]);
    expect(issues({ period: '1s', mode: 'first' })).toHaveLength(1);
    expect(issues({ period: '1s', max_size: 10 })).toHaveLength(1);
  });
});

describe('which batch an event falls under', () => {
  test("the matching trigger's batch, its timeout in ms and max_bytes defaulting to 256 KiB", () => {
    const plan = batchFor(
      definition([{ type: 'event', event_type: 'order.*', batch: { max_size: 500, timeout: '24h' } }]),
      envelope({}, 'order.completed'),
    );
    expect(plan).toMatchObject({ timeoutMs: 86_400_000, maxBytes: 262_144, batch: { max_size: 500 } });
  });

  test('none for an event of another trigger, and none at all for a definition that batches nowhere', () => {
    const batched = definition([
      { type: 'event', event_type: 'order.completed', filter: 'data.vip == true' },
      { type: 'event', event_type: 'order.completed', batch: { max_size: 5, timeout: '1m', max_bytes: 4096 } },
    ]);
    expect(batchFor(batched, envelope({ vip: true }, 'order.completed'))).toBeUndefined();
    expect(batchFor(batched, envelope({ vip: false }, 'order.completed'))).toMatchObject({ maxBytes: 4096 });
    expect(batchFor(definition([{ type: 'event', event_type: 'order.completed' }]), envelope({}))).toBeUndefined();
  });

  test("an event's size is the UTF-8 bytes of its envelope's JSON", () => {
    const ascii = envelope({ s: 'aaaa' });
    const accented = envelope({ s: 'éééé' });
    expect(batchBytesOf(ascii)).toBe(JSON.stringify(ascii).length);
    expect(batchBytesOf(accented)).toBe(JSON.stringify(accented).length + 4);
  });
});
