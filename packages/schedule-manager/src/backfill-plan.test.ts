import { ConflictError, cronRunWorkflowId, InvalidInputError, type CronTrigger } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import {
  MAX_BACKFILL_FIRES,
  planBackfill,
  type BackfillPlan,
  type BackfillPlanFire,
  type BackfillPlanInput,
} from './backfill-plan';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';
const at = (seconds: number): Date => new Date(Date.UTC(2026, 2, 1, 9, 0, seconds));
const runId = (seconds: number): string => cronRunWorkflowId(ACTIVITY, at(seconds));

const cron = (expression: string, extra: Partial<CronTrigger> = {}): CronTrigger => ({
  type: 'cron',
  cron: expression,
  timezone: 'UTC',
  misfire_policy: 'skip',
  max_catchup: 10,
  misfire_grace: '1s',
  ...extra,
});
const everyTwoSeconds = cron('*/2 * * * * *');
const everyThreeSeconds = cron('*/3 * * * * *');

/** A plan request over `[start, end]` for one every-two-seconds trigger, decided through 0:59, at 1:00. */
function input(extra: Partial<BackfillPlanInput> = {}): BackfillPlanInput {
  return {
    activity: { id: ACTIVITY, enabled: true },
    triggers: [{ trigger: everyTwoSeconds, triggerIndex: 0 }],
    start: at(2),
    end: at(8),
    processedThrough: new Map([
      [0, at(59)],
      [1, at(59)],
    ]),
    existingFires: [],
    now: at(60),
    ...extra,
  };
}

function fires(plan: BackfillPlan): BackfillPlanFire[] {
  if (!plan.ok) throw new Error(`expected a plan, got ${plan.error.message}`);
  return plan.fires;
}

function refusal(plan: BackfillPlan): ConflictError | InvalidInputError {
  if (plan.ok) throw new Error('expected a refusal, got a plan');
  return plan.error;
}

/** `[second, trigger, action]` rows, easy to read in a failing assertion. */
const summary = (plan: BackfillPlan) =>
  fires(plan).map((fire) => [
    fire.scheduledFor.getUTCSeconds(),
    fire.triggerIndex,
    fire.action.kind === 'start' ? 'start' : `duplicate:${fire.action.because}`,
  ]);

describe('the range of a backfill', () => {
  test('covers every nominal time from start to end, both included', () => {
    expect(summary(planBackfill(input({ start: at(2), end: at(8) })))).toEqual([
      [2, 0, 'start'],
      [4, 0, 'start'],
      [6, 0, 'start'],
      [8, 0, 'start'],
    ]);
  });

  test('a range that is exactly one fire time backfills that time', () => {
    expect(summary(planBackfill(input({ start: at(4), end: at(4) })))).toEqual([[4, 0, 'start']]);
  });

  test('a range between two fire times backfills nothing and is not an error', () => {
    expect(fires(planBackfill(input({ start: at(3), end: at(3) })))).toEqual([]);
  });

  test('an end before the start is refused, naming end', () => {
    const error = refusal(planBackfill(input({ start: at(8), end: at(2) })));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues).toEqual([{ path: 'end', message: 'must not be before start' }]);
  });

  test('an end in the future is refused, naming end and the current time', () => {
    const error = refusal(planBackfill(input({ end: at(61) })));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues).toEqual([
      { path: 'end', message: 'must not be in the future (now is 2026-03-01T09:01:00.000Z)' },
    ]);
  });

  test('an end exactly at now is allowed', () => {
    const plan = planBackfill(
      input({ start: at(58), end: at(60), now: at(60), processedThrough: new Map([[0, at(60)]]) }),
    );
    expect(summary(plan)).toEqual([
      [58, 0, 'start'],
      [0, 0, 'start'],
    ]);
  });
});

describe('the limit on fire times per request', () => {
  const bigRange = (count: number): Partial<BackfillPlanInput> => ({
    start: new Date(at(0).getTime() - (count - 1) * 1000),
    end: at(0),
    triggers: [{ trigger: cron('* * * * * *'), triggerIndex: 0 }],
    processedThrough: new Map([[0, at(0)]]),
  });

  test(`exactly ${MAX_BACKFILL_FIRES} fire times fit in one request`, () => {
    expect(fires(planBackfill(input(bigRange(MAX_BACKFILL_FIRES))))).toHaveLength(MAX_BACKFILL_FIRES);
  });

  test(`one more than ${MAX_BACKFILL_FIRES} refuses the whole request rather than cutting it, naming end`, () => {
    const error = refusal(planBackfill(input(bigRange(MAX_BACKFILL_FIRES + 1))));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toBe(
      `the range holds more than ${MAX_BACKFILL_FIRES} fire times; split it into smaller backfills`,
    );
    expect((error as InvalidInputError).issues).toEqual([
      { path: 'end', message: `at most ${MAX_BACKFILL_FIRES} fire times per backfill` },
    ]);
  });

  test('the limit counts the fire times of every trigger in the request together', () => {
    const twoTriggers = input({
      triggers: [
        { trigger: everyTwoSeconds, triggerIndex: 0 },
        { trigger: everyThreeSeconds, triggerIndex: 1 },
      ],
      start: at(1),
      end: at(12),
    });
    // 2, 4, 6, 8, 10, 12 and 3, 6, 9, 12: ten fire times.
    expect(fires(planBackfill({ ...twoTriggers, maxFires: 10 }))).toHaveLength(10);
    expect(refusal(planBackfill({ ...twoTriggers, maxFires: 9 })).message).toContain('more than 9 fire times');
    expect(refusal(planBackfill({ ...twoTriggers, triggerIndex: 0, maxFires: 5 })).message).toContain(
      'more than 5 fire times',
    );
    expect(fires(planBackfill({ ...twoTriggers, triggerIndex: 0, maxFires: 6 }))).toHaveLength(6);
  });
});

describe('fire times the schedule has not decided yet', () => {
  test("a time after processed-through (e.g. missed while paused) refuses the request: it is the misfire policy's to run on resume", () => {
    const error = refusal(planBackfill(input({ processedThrough: new Map([[0, at(5)]]) })));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toBe(
      "fire time 2026-03-01T09:00:06+00:00 is not decided yet: it is the schedule's to run under its misfire policy (resume a paused schedule first)",
    );
    expect((error as InvalidInputError).issues).toEqual([
      { path: 'end', message: 'fire times after 2026-03-01T09:00:05+00:00 cannot be backfilled yet' },
    ]);
  });

  test('a time exactly at processed-through is decided and may be backfilled', () => {
    expect(summary(planBackfill(input({ processedThrough: new Map([[0, at(8)]]) })))).toHaveLength(4);
  });

  test('a trigger whose schedule state was never written has decided nothing', () => {
    const error = refusal(planBackfill(input({ processedThrough: new Map() })));
    expect((error as InvalidInputError).issues).toEqual([
      { path: 'end', message: 'fire times after the schedule was created cannot be backfilled yet' },
    ]);
  });

  test('the earliest undecided time is the one named, across triggers', () => {
    const plan = planBackfill(
      input({
        triggers: [
          { trigger: everyTwoSeconds, triggerIndex: 0 },
          { trigger: everyThreeSeconds, triggerIndex: 1 },
        ],
        processedThrough: new Map([
          [0, at(59)],
          [1, at(2)],
        ]),
      }),
    );
    expect(refusal(plan).message).toMatch(/^fire time 2026-03-01T09:00:03\+00:00 is not decided yet/);
  });
});

describe('times that already have a run', () => {
  test('a time whose run the fire log records (started, or found already there) is a duplicate and is not started again', () => {
    const plan = planBackfill(
      input({
        existingFires: [
          { scheduledFor: at(4), status: 'started', workflowId: runId(4) },
          { scheduledFor: at(6), status: 'duplicate', workflowId: runId(6) },
        ],
      }),
    );
    expect(summary(plan)).toEqual([
      [2, 0, 'start'],
      [4, 0, 'duplicate:recorded'],
      [6, 0, 'duplicate:recorded'],
      [8, 0, 'start'],
    ]);
  });

  test('a skipped time has no run, so a backfill starts it', () => {
    const plan = planBackfill(input({ existingFires: [{ scheduledFor: at(4), status: 'skipped', workflowId: null }] }));
    expect(summary(plan).filter(([second]) => second === 4)).toEqual([[4, 0, 'start']]);
  });

  test('a decided run whose start is not confirmed yet is started (the start answers duplicate if the tick got there first)', () => {
    const plan = planBackfill(
      input({ existingFires: [{ scheduledFor: at(4), status: 'pending', workflowId: runId(4) }] }),
    );
    expect(summary(plan).filter(([second]) => second === 4)).toEqual([[4, 0, 'start']]);
  });

  test('a run recorded by another trigger at the same instant is the same run', () => {
    const plan = planBackfill(
      input({
        triggers: [{ trigger: everyThreeSeconds, triggerIndex: 1 }],
        start: at(6),
        end: at(6),
        existingFires: [{ scheduledFor: at(6), status: 'started', workflowId: runId(6) }],
      }),
    );
    expect(summary(plan)).toEqual([[6, 1, 'duplicate:recorded']]);
  });

  test('two triggers firing at one instant share one run: the second is a duplicate within the request', () => {
    const plan = planBackfill(
      input({
        triggers: [
          { trigger: everyThreeSeconds, triggerIndex: 1 },
          { trigger: everyTwoSeconds, triggerIndex: 0 },
        ],
        start: at(5),
        end: at(6),
      }),
    );
    expect(summary(plan)).toEqual([
      [6, 0, 'start'],
      [6, 1, 'duplicate:in_request'],
    ]);
    expect(new Set(fires(plan).map((fire) => fire.workflowId))).toEqual(new Set([runId(6)]));
  });
});

describe('the order and shape of the planned fires', () => {
  test('fires are planned oldest first, and at one instant by trigger index', () => {
    const plan = planBackfill(
      input({
        triggers: [
          { trigger: everyThreeSeconds, triggerIndex: 1 },
          { trigger: everyTwoSeconds, triggerIndex: 0 },
        ],
        start: at(0),
        end: at(6),
      }),
    );
    expect(summary(plan).map(([second, trigger]) => [second, trigger])).toEqual([
      [0, 0],
      [0, 1],
      [2, 0],
      [3, 1],
      [4, 0],
      [6, 0],
      [6, 1],
    ]);
  });

  test('each fire is the cron run of its nominal time, with the window since the previous nominal time and its age', () => {
    const [fire] = fires(planBackfill(input({ start: at(4), end: at(4) })));
    expect(fire).toEqual({
      triggerIndex: 0,
      scheduledFor: at(4),
      workflowId: runId(4),
      runId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      windowStart: at(2),
      lateByMs: 56_000,
      action: { kind: 'start' },
    });
  });
});

describe('requests that cannot be backfilled at all', () => {
  test('a disabled activity is a conflict', () => {
    const error = refusal(planBackfill(input({ activity: { id: ACTIVITY, enabled: false } })));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.message).toBe(`activity ${ACTIVITY} is disabled; enable it before backfilling it`);
  });

  test('an activity without cron triggers is a conflict', () => {
    const error = refusal(planBackfill(input({ triggers: [] })));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.message).toBe(`activity ${ACTIVITY} has no cron triggers to backfill`);
  });

  test('a trigger_index that is not a cron trigger is refused, naming trigger_index', () => {
    const error = refusal(planBackfill(input({ triggerIndex: 3 })));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues).toEqual([
      { path: 'trigger_index', message: 'must be the index of a cron trigger' },
    ]);
  });

  test('only the named trigger is backfilled when trigger_index is given', () => {
    const plan = planBackfill(
      input({
        triggers: [
          { trigger: everyTwoSeconds, triggerIndex: 0 },
          { trigger: everyThreeSeconds, triggerIndex: 1 },
        ],
        triggerIndex: 1,
      }),
    );
    expect(summary(plan)).toEqual([
      [3, 1, 'start'],
      [6, 1, 'start'],
    ]);
  });
});
