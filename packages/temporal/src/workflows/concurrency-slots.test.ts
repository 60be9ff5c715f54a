import { describe, expect, test } from 'vitest';
import {
  DEFAULT_MAX_QUEUE_BYTES,
  emptySlotState,
  isIdle,
  MAX_OVERLAP_BUFFER,
  overlapOf,
  queuedBytes,
  releaseSlot,
  requestSlot,
  type OverlapMode,
} from './concurrency-slots';
import { eventRunWorkflowId } from '@activity-core/contracts/ids';

const ask = (runWorkflowId: string, limit = 1, onLimit: 'queue' | 'skip' | 'replace' = 'queue') => ({
  runWorkflowId,
  limit,
  onLimit,
});

describe('concurrency slots', () => {
  test('skips, with the reason, a run that would take the queue past its byte bound, and queues again once there is room', () => {
    const state = emptySlotState(1, 'queue');
    const bounded = (id: string) => ({ ...ask(id), maxQueueBytes: 2 * queuedBytes('q-1') });
    requestSlot(state, bounded('holder'));
    expect(requestSlot(state, bounded('q-1'))).toEqual([]);
    expect(requestSlot(state, bounded('q-2'))).toEqual([]);
    expect(requestSlot(state, bounded('q-3'))).toEqual([
      {
        runWorkflowId: 'q-3',
        answer: 'skipped',
        reason:
          'the concurrency limit of 1 was reached (1 running) and its queue is full: 2 runs wait (12 of at most 12 bytes of run ids)',
      },
    ]);
    expect(state.queue).toEqual(['q-1', 'q-2']);
    // A repeated request of a queued run is not a new entry.
    expect(requestSlot(state, bounded('q-2'))).toEqual([]);
    releaseSlot(state, 'holder');
    expect(requestSlot(state, bounded('q-4'))).toEqual([]);
    expect(state.queue).toEqual(['q-2', 'q-4']);
  });

  test('counts ids in UTF-8 with their JSON quotes and comma, and bounds the default queue at half the 2 MiB payload limit', () => {
    expect(queuedBytes('abc')).toBe(6);
    expect(queuedBytes('é')).toBe(5);
    expect(queuedBytes('€')).toBe(6);
    expect(queuedBytes('😀')).toBe(7);
    expect(DEFAULT_MAX_QUEUE_BYTES).toBe(1024 * 1024);
    const state = emptySlotState(1, 'queue');
    // Run ids of 255 bytes (an event id of 200 characters): the queue takes them up to the default bound.
    const id = (n: number) =>
      eventRunWorkflowId('00000000-0000-4000-8000-000000000001', `${'e'.repeat(200)}-${String(n).padStart(5, '0')}`);
    const fit = Math.floor(DEFAULT_MAX_QUEUE_BYTES / queuedBytes(id(0)));
    state.holders = ['holder'];
    state.queue = Array.from({ length: fit - 1 }, (_, n) => id(n));
    expect(requestSlot(state, ask('last'.padEnd(252, '-')))).toEqual([]);
    expect(requestSlot(state, ask('over'.padEnd(252, '-')))).toMatchObject([{ answer: 'skipped' }]);
    expect(state.queue).toHaveLength(fit);
    expect(fit).toBeGreaterThan(4_000);
    // What continue-as-new carries stays under Temporal's 2 MiB payload limit with room to spare.
    expect(JSON.stringify(state).length).toBeLessThan(DEFAULT_MAX_QUEUE_BYTES + 1_000);
  });

  test('a coordinator replaying a history from before the bound queues without it', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('holder'));
    for (const id of ['q-1', 'q-2', 'q-3'])
      expect(requestSlot(state, { ...ask(id), maxQueueBytes: 1 }, { boundQueue: false })).toEqual([]);
    expect(state.queue).toHaveLength(3);
  });

  test('grants up to the limit and queues the rest in arrival order', () => {
    const state = emptySlotState(2, 'queue');
    expect(requestSlot(state, ask('a', 2))).toEqual([{ runWorkflowId: 'a', answer: 'granted' }]);
    expect(requestSlot(state, ask('b', 2))).toEqual([{ runWorkflowId: 'b', answer: 'granted' }]);
    expect(requestSlot(state, ask('c', 2))).toEqual([]);
    expect(requestSlot(state, ask('d', 2))).toEqual([]);
    expect(state.queue).toEqual(['c', 'd']);
    expect(releaseSlot(state, 'b')).toEqual([{ runWorkflowId: 'c', answer: 'granted' }]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'd', answer: 'granted' }]);
    expect(state.holders).toEqual(['c', 'd']);
  });

  test('skips a run over the limit when on_limit is skip, with a reason naming the limit', () => {
    const state = emptySlotState(1, 'skip');
    requestSlot(state, ask('a', 1, 'skip'));
    expect(requestSlot(state, ask('b', 1, 'skip'))).toEqual([
      {
        runWorkflowId: 'b',
        answer: 'skipped',
        reason: 'the concurrency limit of 1 was reached (1 running); on_limit is skip',
      },
    ]);
    expect(state.queue).toEqual([]);
  });

  test('replace: the holder is cancelled for the newer run, which takes the slot once it is released; a run waiting is replaced by a newer one', () => {
    const state = emptySlotState(1, 'replace');
    expect(requestSlot(state, ask('a', 1, 'replace'))).toEqual([{ runWorkflowId: 'a', answer: 'granted' }]);
    expect(requestSlot(state, ask('b', 1, 'replace'))).toEqual([{ runWorkflowId: 'a', answer: 'cancel', by: 'b' }]);
    // The holder keeps its slot until it has ended: never two runs at once.
    expect(state.holders).toEqual(['a']);
    expect(requestSlot(state, ask('c', 1, 'replace'))).toEqual([
      { runWorkflowId: 'b', answer: 'skipped', reason: 'replaced by the newer run c; on_limit is replace' },
    ]);
    // Repeated requests change nothing; the holder is asked to cancel once.
    expect(requestSlot(state, ask('c', 1, 'replace'))).toEqual([]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'c', answer: 'granted' }]);
    expect(state).toMatchObject({ holders: ['c'], queue: [], cancelling: [] });
  });

  test('replace with a limit of 2: each newer run cancels the oldest holder not already being cancelled', () => {
    const state = emptySlotState(2, 'replace');
    requestSlot(state, ask('a', 2, 'replace'));
    requestSlot(state, ask('b', 2, 'replace'));
    expect(requestSlot(state, ask('c', 2, 'replace'))).toEqual([{ runWorkflowId: 'a', answer: 'cancel', by: 'c' }]);
    expect(requestSlot(state, ask('d', 2, 'replace'))).toEqual([{ runWorkflowId: 'b', answer: 'cancel', by: 'd' }]);
    expect(requestSlot(state, ask('e', 2, 'replace'))).toEqual([
      { runWorkflowId: 'c', answer: 'skipped', reason: 'replaced by the newer run e; on_limit is replace' },
    ]);
    expect(releaseSlot(state, 'b')).toEqual([{ runWorkflowId: 'd', answer: 'granted' }]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'e', answer: 'granted' }]);
    expect(state.holders).toEqual(['d', 'e']);
  });

  test('a repeated request from a holder is granted again and one from a queued run changes nothing', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a'));
    requestSlot(state, ask('b'));
    expect(requestSlot(state, ask('a'))).toEqual([{ runWorkflowId: 'a', answer: 'granted' }]);
    expect(requestSlot(state, ask('b'))).toEqual([]);
    expect(state).toMatchObject({ holders: ['a'], queue: ['b'] });
  });

  test('a release from an unknown run, or a second release, changes nothing', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a'));
    requestSlot(state, ask('b'));
    expect(releaseSlot(state, 'zzz')).toEqual([]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'b', answer: 'granted' }]);
    expect(releaseSlot(state, 'a')).toEqual([]);
    expect(state).toMatchObject({ holders: ['b'], queue: [] });
  });

  test('a queued run that leaves the queue is never granted', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a'));
    requestSlot(state, ask('b'));
    requestSlot(state, ask('c'));
    expect(releaseSlot(state, 'b')).toEqual([]);
    expect(releaseSlot(state, 'a')).toEqual([{ runWorkflowId: 'c', answer: 'granted' }]);
  });

  test('a new request never overtakes the queue, even when a slot is free', () => {
    const state = { limit: 1, onLimit: 'queue' as const, holders: [], queue: ['x'] };
    expect(requestSlot(state, ask('y'))).toEqual([{ runWorkflowId: 'x', answer: 'granted' }]);
    expect(state).toMatchObject({ holders: ['x'], queue: ['y'] });
  });

  test('a raised limit grants waiting runs at once; a lowered one takes no slot away', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, ask('a', 1));
    requestSlot(state, ask('b', 1));
    expect(requestSlot(state, ask('c', 3))).toEqual([
      { runWorkflowId: 'b', answer: 'granted' },
      { runWorkflowId: 'c', answer: 'granted' },
    ]);
    expect(requestSlot(state, ask('d', 1))).toEqual([]);
    expect(state).toMatchObject({ holders: ['a', 'b', 'c'], queue: ['d'] });
    releaseSlot(state, 'a');
    releaseSlot(state, 'b');
    expect(releaseSlot(state, 'c')).toEqual([{ runWorkflowId: 'd', answer: 'granted' }]);
  });

  test('is idle only with no holder and no queue', () => {
    const state = emptySlotState(1, 'queue');
    expect(isIdle(state)).toBe(true);
    requestSlot(state, ask('a'));
    expect(isIdle(state)).toBe(false);
    releaseSlot(state, 'a');
    expect(isIdle(state)).toBe(true);
  });
});

const fire = (runWorkflowId: string, overlap: OverlapMode) => ({
  runWorkflowId,
  limit: 1,
  onLimit: 'queue' as const,
  overlap,
});

describe('cron overlap slots', () => {
  test('skip: the run of a later fire is skipped while the first runs, with a reason naming the running one', () => {
    const state = emptySlotState(1, 'queue');
    expect(requestSlot(state, fire('r1', 'skip'))).toEqual([{ runWorkflowId: 'r1', answer: 'granted' }]);
    expect(requestSlot(state, fire('r2', 'skip'))).toEqual([
      { runWorkflowId: 'r2', answer: 'skipped', reason: "r1 is still running; the trigger's overlap policy is skip" },
    ]);
    expect(releaseSlot(state, 'r1')).toEqual([]);
    expect(requestSlot(state, fire('r3', 'skip'))).toEqual([{ runWorkflowId: 'r3', answer: 'granted' }]);
  });

  test('buffer_one: the first overlapping run waits, later ones are skipped, and the waiting one runs next', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire('r1', 'buffer_one'));
    expect(requestSlot(state, fire('r2', 'buffer_one'))).toEqual([]);
    expect(requestSlot(state, fire('r3', 'buffer_one'))).toEqual([
      {
        runWorkflowId: 'r3',
        answer: 'skipped',
        reason: "r1 is still running and r2 already waits for it; the trigger's overlap policy is buffer_one",
      },
    ]);
    expect(releaseSlot(state, 'r1')).toEqual([{ runWorkflowId: 'r2', answer: 'granted' }]);
    expect(requestSlot(state, fire('r4', 'buffer_one'))).toEqual([]);
    expect(state).toMatchObject({ holders: ['r2'], queue: ['r4'] });
  });

  test('buffer_all: every overlapping run waits in order, up to the buffer limit', () => {
    const state = emptySlotState(1, 'queue');
    // Cron run ids end in a fixed-width fire time, so they sort as their fires: pad these the same way.
    const r = (i: number) => `r${String(i).padStart(4, '0')}`;
    requestSlot(state, fire(r(0), 'buffer_all'));
    for (let i = 1; i <= MAX_OVERLAP_BUFFER; i++) expect(requestSlot(state, fire(r(i), 'buffer_all'))).toEqual([]);
    expect(requestSlot(state, fire(r(MAX_OVERLAP_BUFFER + 1), 'buffer_all'))).toMatchObject([
      {
        runWorkflowId: r(MAX_OVERLAP_BUFFER + 1),
        answer: 'skipped',
        reason: expect.stringContaining('1000 runs already wait'),
      },
    ]);
    expect(releaseSlot(state, r(0))).toEqual([{ runWorkflowId: r(1), answer: 'granted' }]);
    expect(releaseSlot(state, r(1))).toEqual([{ runWorkflowId: r(2), answer: 'granted' }]);
  });

  // A misfire catch-up starts the runs of several fires at once; their requests reach the coordinator in any order.
  const at = (hour: number) => `activity-a:2026-03-02T${String(hour).padStart(2, '0')}:00:00+00:00`;

  test('buffer_all: runs whose requests arrive out of fire order still wait and start in fire order', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire(at(9), 'buffer_all'));
    for (const hour of [12, 10, 11]) expect(requestSlot(state, fire(at(hour), 'buffer_all'))).toEqual([]);
    expect(state.queue).toEqual([at(10), at(11), at(12)]);
    expect(releaseSlot(state, at(9))).toEqual([{ runWorkflowId: at(10), answer: 'granted' }]);
  });

  test('buffer_one: a run of an earlier fire that asks late takes the one place; the later waiting run is skipped', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire(at(9), 'buffer_one'));
    expect(requestSlot(state, fire(at(11), 'buffer_one'))).toEqual([]);
    expect(requestSlot(state, fire(at(10), 'buffer_one'))).toEqual([
      {
        runWorkflowId: at(11),
        answer: 'skipped',
        reason: `${at(9)} is still running and the earlier fire's run ${at(10)} waits for it; the trigger's overlap policy is buffer_one`,
      },
    ]);
    expect(requestSlot(state, fire(at(12), 'buffer_one'))).toMatchObject([
      { runWorkflowId: at(12), answer: 'skipped' },
    ]);
    expect(releaseSlot(state, at(9))).toEqual([{ runWorkflowId: at(10), answer: 'granted' }]);
  });

  test('cancel_other: the newest fire wins even when its request arrives first; an earlier one asking late cancels nothing', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire(at(9), 'cancel_other'));
    expect(requestSlot(state, fire(at(11), 'cancel_other'))).toEqual([
      { runWorkflowId: at(9), answer: 'cancel', by: at(11) },
    ]);
    expect(requestSlot(state, fire(at(10), 'cancel_other'))).toEqual([
      {
        runWorkflowId: at(10),
        answer: 'skipped',
        reason: `replaced by the newer run ${at(11)}; the trigger's overlap policy is cancel_other`,
      },
    ]);
    expect(releaseSlot(state, at(9))).toEqual([{ runWorkflowId: at(11), answer: 'granted' }]);
    // Nor does it cancel a newer holder.
    expect(requestSlot(state, fire(at(8), 'cancel_other'))).toMatchObject([
      { runWorkflowId: at(8), answer: 'skipped' },
    ]);
    expect(state).toMatchObject({ holders: [at(11)], queue: [], cancelling: [] });
  });

  test('cancel_other: the holder is asked to cancel once, the newest run waits and a run it replaces is skipped', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire('r1', 'cancel_other'));
    expect(requestSlot(state, fire('r2', 'cancel_other'))).toEqual([
      { runWorkflowId: 'r1', answer: 'cancel', by: 'r2' },
    ]);
    expect(requestSlot(state, fire('r3', 'cancel_other'))).toEqual([
      {
        runWorkflowId: 'r2',
        answer: 'skipped',
        reason: "replaced by the newer run r3; the trigger's overlap policy is cancel_other",
      },
    ]);
    expect(requestSlot(state, fire('r3', 'cancel_other'))).toEqual([]);
    expect(releaseSlot(state, 'r1')).toEqual([{ runWorkflowId: 'r3', answer: 'granted' }]);
    expect(state).toMatchObject({ holders: ['r3'], queue: [], cancelling: [] });
    expect(requestSlot(state, fire('r4', 'cancel_other'))).toEqual([
      { runWorkflowId: 'r3', answer: 'cancel', by: 'r4' },
    ]);
  });

  test('a holder that closed without releasing (reclaimed by the watchdog) hands the slot to the waiting run', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire('r1', 'buffer_all'));
    requestSlot(state, fire('r2', 'buffer_all'));
    expect(releaseSlot(state, 'r1')).toEqual([{ runWorkflowId: 'r2', answer: 'granted' }]);
    expect(isIdle(state)).toBe(false);
  });

  test('a repeated request from the holder is granted again; a changed policy applies from the next request', () => {
    const state = emptySlotState(1, 'queue');
    requestSlot(state, fire('r1', 'skip'));
    expect(requestSlot(state, fire('r1', 'skip'))).toEqual([{ runWorkflowId: 'r1', answer: 'granted' }]);
    expect(requestSlot(state, fire('r2', 'buffer_all'))).toEqual([]);
    expect(state).toMatchObject({ overlap: 'buffer_all', holders: ['r1'], queue: ['r2'] });
  });
});

describe('which runs an overlap policy applies to', () => {
  const input = (trigger: Record<string, unknown>, overlap?: string) =>
    ({
      activity: {
        id: 'a',
        name: 'n',
        version: 1,
        definition: {
          triggers: [
            { type: 'event', event_type: 'x.y' },
            { type: 'cron', cron: '0 9 * * *', ...(overlap === undefined ? {} : { overlap }) },
          ],
        },
      },
      trigger,
    }) as unknown as Parameters<typeof overlapOf>[0];
  const cron = { type: 'cron', scheduled_for: 's', window_start: 'w', window_end: 's', trigger_index: 1 };

  test('a cron run of a trigger with a policy other than allow_all', () => {
    expect(overlapOf(input(cron, 'buffer_one'))).toEqual({ mode: 'buffer_one', triggerIndex: 1 });
  });

  test('not runs of allow_all or of a trigger without overlap, nor older cron runs, backfills, events or manual runs', () => {
    expect(overlapOf(input(cron, 'allow_all'))).toBeUndefined();
    expect(overlapOf(input(cron))).toBeUndefined();
    const { trigger_index: _index, ...older } = cron;
    expect(overlapOf(input(older, 'skip'))).toBeUndefined();
    expect(overlapOf(input({ ...cron, type: 'backfill' }, 'skip'))).toBeUndefined();
    expect(overlapOf(input({ type: 'event', event: {} }, 'skip'))).toBeUndefined();
    expect(overlapOf(input({ type: 'manual', key: 'k', requested_at: 't' }, 'skip'))).toBeUndefined();
    expect(overlapOf(input({ ...cron, trigger_index: 0 }, 'skip'))).toBeUndefined();
  });
});
