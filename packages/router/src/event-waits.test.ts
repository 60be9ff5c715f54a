import type { EventWaitRow, WaitScanDecision } from '@activity-core/db';
import { describe, expect, it } from 'vitest';
import { createAvailabilityGate } from './availability-gate';
import { createEventWaits, decideWaitMatches, MAX_WAIT_SCAN_COST } from './event-waits';

const envelope = (event_id: string, event_type: string, data: Record<string, unknown>) => ({
  event_id,
  event_type,
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

const MATCH = 'event.data.order_id == trigger.event.data.order_id';
const paidA = envelope('paid-a', 'order.paid', { order_id: 'A' });

describe('wait_for_event decisions', () => {
  it('match the waits whose expression is true for the event, and count the ones it fails on', () => {
    const decision = decideWaitMatches(paidA, [
      { waitId: 'w-a', match: MATCH, triggerEvent: envelope('e1', 'order.created', { order_id: 'A' }) },
      { waitId: 'w-b', match: MATCH, triggerEvent: envelope('e2', 'order.created', { order_id: 'B' }) },
      { waitId: 'w-c', match: MATCH, triggerEvent: envelope('e3', 'order.created', {}) },
      { waitId: 'w-any', match: null, triggerEvent: null },
    ]);
    expect(decision).toEqual({
      matched: [
        { waitId: 'w-a', detail: `matched: ${MATCH}` },
        { waitId: 'w-any', detail: 'no match expression: the first event of the type' },
      ],
      errors: 1,
      examined: 4,
    });
  });

  it('read an empty trigger event for runs not started by an event, so expressions on its data fail', () => {
    expect(decideWaitMatches(paidA, [{ waitId: 'w-cron', match: MATCH, triggerEvent: null }])).toEqual({
      matched: [],
      errors: 1,
      examined: 1,
    });
    expect(
      decideWaitMatches(paidA, [{ waitId: 'w-cron', match: 'event.data.order_id == "A"', triggerEvent: null }]).matched,
    ).toHaveLength(1);
  });

  it('bound the cost of all the evaluations of one scan together, leaving the waits past the budget unexamined', () => {
    // Each evaluation of this expression runs out of its own limit: a hostile wait, repeated by many runs.
    const costly = 'trigger.event.data.items.all(a, trigger.event.data.items.all(b, a + b != "x"))';
    const items = Array.from({ length: 5_000 }, (_, i) => `item-${i}`);
    const hostile = (waitId: string) => ({
      waitId,
      match: costly,
      triggerEvent: envelope(`t-${waitId}`, 'order.created', { items }),
    });
    const candidates = [
      hostile('w-1'),
      hostile('w-2'),
      hostile('w-3'),
      hostile('w-4'),
      { waitId: 'w-cheap', match: MATCH, triggerEvent: envelope('t', 'order.created', { order_id: 'A' }) },
    ];
    const budget = { remaining: MAX_WAIT_SCAN_COST };
    const decision = decideWaitMatches(paidA, candidates, budget);
    // MAX_WAIT_SCAN_COST pays for two whole evaluations at their own limit, no more.
    expect(decision).toEqual({ matched: [], errors: 2, examined: 2 });
    expect(budget.remaining).toBe(0);
    // A later page of the same scan finds the budget spent and examines nothing.
    expect(decideWaitMatches(paidA, candidates.slice(4), budget)).toEqual({ matched: [], errors: 0, examined: 0 });
    // Cheap expressions barely touch it.
    const fresh = { remaining: MAX_WAIT_SCAN_COST };
    expect(decideWaitMatches(paidA, candidates.slice(4), fresh)).toMatchObject({
      examined: 1,
      matched: [{ waitId: 'w-cheap' }],
    });
    expect(fresh.remaining).toBeGreaterThan(MAX_WAIT_SCAN_COST - 1_000);
  });
});

const row = (waitId: string): EventWaitRow => ({
  waitId,
  runId: '00000000-0000-4000-8000-000000000001',
  activityId: '00000000-0000-4000-8000-000000000002',
  taskIndex: 0,
  eventType: 'order.paid',
  sources: null,
  match: MATCH,
  triggerEvent: null,
  status: 'matched',
  matchedEventId: 'paid-a',
  signalState: 'pending',
  detail: null,
  registeredAt: new Date(),
  expiresAt: new Date(),
  closedAt: new Date(),
  updatedAt: new Date(),
});

function harness(options: {
  scanned?: boolean;
  pending?: EventWaitRow[];
  signal?: () => Promise<'delivered'>;
  /** Another dispatch of the event takes the scan first; what it matched is then recorded pending. */
  scanTakenWith?: EventWaitRow[];
}) {
  const calls: string[] = [];
  const settled: Array<[string, string]> = [];
  let scannedByOther = false;
  const waits = createEventWaits({
    eventWaits: {
      state: async () => {
        calls.push('state');
        if (scannedByOther) return { scanned: true, pending: [...(options.scanTakenWith ?? [])] };
        return { scanned: options.scanned ?? false, pending: [...(options.pending ?? [])] };
      },
      scan: async (input) => {
        calls.push('scan');
        if (options.scanTakenWith !== undefined) {
          scannedByOther = true;
          return undefined;
        }
        const decision: WaitScanDecision = input.decide([{ waitId: 'w-new', match: null, triggerEvent: null }]);
        return decision.matched.map((entry) => row(entry.waitId));
      },
      settleSignal: async (waitId, outcome) => void settled.push([waitId, outcome]),
    },
    signaller: {
      signal: async (waitId) => {
        calls.push(`signal ${waitId}`);
        return await (options.signal ?? (async () => 'delivered' as const))();
      },
    },
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } as never,
  });
  return { waits, calls, settled };
}

const run = { quick: false, waitsOpen: false, timeoutMs: 1_000, probeTimeoutMs: 500 };

describe('wait_for_event processing', () => {
  it('does nothing for a just-accepted event no wait was open for', async () => {
    const { waits, calls } = harness({});
    expect(await waits.process(paidA, createAvailabilityGate(), { ...run, quick: true })).toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('scans a just-accepted event some wait was open for without reading a record first', async () => {
    const { waits, calls } = harness({});
    expect(
      await waits.process(paidA, createAvailabilityGate(), { ...run, quick: true, waitsOpen: true }),
    ).toBeUndefined();
    expect(calls).toEqual(['scan', 'signal w-new']);
  });

  it('scans once, then signals each matched task and records the answer', async () => {
    const { waits, calls, settled } = harness({});
    expect(await waits.process(paidA, createAvailabilityGate(), run)).toBeUndefined();
    expect(calls).toEqual(['state', 'scan', 'signal w-new']);
    expect(settled).toEqual([['w-new', 'delivered']]);
  });

  it('on a retry skips the recorded scan and signals only what is still pending', async () => {
    const { waits, calls } = harness({ scanned: true, pending: [row('w-old')] });
    expect(await waits.process(paidA, createAvailabilityGate(), run)).toBeUndefined();
    expect(calls).toEqual(['state', 'signal w-old']);
  });

  it('signals the matches of a scan another dispatch of the same event made first, in case that one dies before signalling', async () => {
    const { waits, calls, settled } = harness({ scanTakenWith: [row('w-theirs')] });
    expect(await waits.process(paidA, createAvailabilityGate(), run)).toBeUndefined();
    expect(calls).toEqual(['state', 'scan', 'state', 'signal w-theirs']);
    expect(settled).toEqual([['w-theirs', 'delivered']]);

    const quick = harness({ scanTakenWith: [row('w-theirs')] });
    expect(
      await quick.waits.process(paidA, createAvailabilityGate(), { ...run, quick: true, waitsOpen: true }),
    ).toBeUndefined();
    expect(quick.calls).toEqual(['scan', 'state', 'signal w-theirs']);
  });

  it('leaves a signal Temporal did not take pending and says the event must be retried', async () => {
    const { waits, settled } = harness({
      scanned: true,
      pending: [row('w-old')],
      signal: async () => {
        throw new Error('the signal was refused');
      },
    });
    const failure = await waits.process(paidA, createAvailabilityGate(), run);
    expect(failure).toEqual({ message: 'the signal was refused', unreachable: false });
    expect(settled).toEqual([]);
  });
});
