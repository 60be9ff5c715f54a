import type { CronTrigger, MisfirePolicy } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { fireRange, planFires, type PlannedFire } from './fire-plan';

const at = (seconds: number, ms = 0): Date => new Date(Date.UTC(2026, 2, 1, 9, 0, seconds, ms));

function everyTwoSeconds(policy: MisfirePolicy, extra: Partial<CronTrigger> = {}): CronTrigger {
  return {
    type: 'cron',
    cron: '*/2 * * * * *',
    timezone: 'UTC',
    misfire_policy: policy,
    max_catchup: 10,
    misfire_grace: '1s',
    ...extra,
  };
}

/** `[second, kind, reason]` rows, easy to read in a failing assertion. */
const summary = (fires: PlannedFire[]) =>
  fires.map((fire) => [fire.scheduledFor.getUTCSeconds(), fire.kind, fire.reason]);
const windows = (fires: PlannedFire[]) =>
  fires.flatMap((fire) =>
    fire.kind === 'run' ? [[fire.windowStart.getUTCSeconds(), fire.scheduledFor.getUTCSeconds()]] : [],
  );

describe('a tick that arrives on time', () => {
  test('runs its nominal time with the window since the previous nominal time and moves processed-through to now', () => {
    const plan = planFires({
      trigger: everyTwoSeconds('skip'),
      processedThrough: at(0),
      lastWindowEnd: at(0),
      tickScheduledFor: at(2),
      now: at(2, 300),
    });
    expect(summary(plan.fires)).toEqual([[2, 'run', 'on_time']]);
    expect(windows(plan.fires)).toEqual([[0, 2]]);
    expect(plan.processedThrough).toEqual(at(2, 300));
    expect(plan.lastWindowEnd).toEqual(at(2));
    expect(plan.foreignTickScheduledFor).toBe(false);
  });

  test('a fire within its grace is on time, even under the skip policy', () => {
    const plan = planFires({
      trigger: everyTwoSeconds('skip', { misfire_grace: '5s' }),
      processedThrough: at(0),
      lastWindowEnd: null,
      tickScheduledFor: at(2),
      now: at(4, 500),
    });
    expect(summary(plan.fires)).toEqual([
      [2, 'run', 'on_time'],
      [4, 'run', 'on_time'],
    ]);
    expect(windows(plan.fires)).toEqual([
      [0, 2],
      [2, 4],
    ]);
  });

  test('jitter delays fires on purpose and never makes one late', () => {
    const plan = planFires({
      trigger: everyTwoSeconds('skip', { jitter: '3s' }),
      processedThrough: at(0),
      lastWindowEnd: null,
      tickScheduledFor: at(2),
      now: at(5, 500),
    });
    expect(summary(plan.fires)).toEqual([
      [2, 'run', 'on_time'],
      [4, 'run', 'on_time'],
    ]);
  });

  test('the same nominal time delivered twice is decided once: the second delivery plans nothing', () => {
    const first = planFires({
      trigger: everyTwoSeconds('catchup'),
      processedThrough: at(0),
      lastWindowEnd: null,
      tickScheduledFor: at(2),
      now: at(2, 100),
    });
    const second = planFires({
      trigger: everyTwoSeconds('catchup'),
      processedThrough: first.processedThrough,
      lastWindowEnd: first.lastWindowEnd,
      tickScheduledFor: at(2),
      now: at(2, 400),
    });
    expect(second.fires).toEqual([]);
    expect(second.processedThrough).toEqual(at(2, 400));
    expect(second.lastWindowEnd).toEqual(at(2));
  });
});

describe('after an outage (fires 02..08 missed, 10 due half a second ago, grace 1s)', () => {
  const outage = (policy: MisfirePolicy, extra: Partial<CronTrigger> = {}, lastWindowEnd: Date | null = at(0)) =>
    planFires({
      trigger: everyTwoSeconds(policy, extra),
      processedThrough: at(0),
      lastWindowEnd,
      tickScheduledFor: at(2),
      now: at(10, 500),
    });

  test('skip: no runs for the missed times, each recorded as misfire_skip; the next on-time fire runs normally', () => {
    const plan = outage('skip');
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'misfire_skip'],
      [4, 'skip', 'misfire_skip'],
      [6, 'skip', 'misfire_skip'],
      [8, 'skip', 'misfire_skip'],
      [10, 'run', 'on_time'],
    ]);
    expect(windows(plan.fires)).toEqual([[8, 10]]);
    expect(plan.processedThrough).toEqual(at(10, 500));
  });

  test('catchup: the most recent max_catchup missed times run in order with their own windows; older ones are catchup_limit', () => {
    const plan = outage('catchup', { max_catchup: 2 });
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'catchup_limit'],
      [4, 'skip', 'catchup_limit'],
      [6, 'run', 'misfire_catchup'],
      [8, 'run', 'misfire_catchup'],
      [10, 'run', 'on_time'],
    ]);
    expect(windows(plan.fires)).toEqual([
      [4, 6],
      [6, 8],
      [8, 10],
    ]);
  });

  test('catchup under its limit runs every missed time, the oldest from where the last window ended', () => {
    const plan = outage('catchup');
    expect(windows(plan.fires)).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 8],
      [8, 10],
    ]);
  });

  test('compress: one run for the latest missed time whose window starts where the last window ended', () => {
    const plan = outage('compress');
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'compressed'],
      [4, 'skip', 'compressed'],
      [6, 'skip', 'compressed'],
      [8, 'run', 'misfire_compress'],
      [10, 'run', 'on_time'],
    ]);
    expect(windows(plan.fires)).toEqual([
      [0, 8],
      [8, 10],
    ]);
    const covered = plan.fires
      .filter((fire) => fire.kind === 'skip')
      .map((fire) => fire.kind === 'skip' && fire.coveredBy);
    expect(covered).toEqual([at(8), at(8), at(8)]);
    expect(plan.lastWindowEnd).toEqual(at(10));
  });

  test('compress with no earlier run starts the window at the nominal time before the oldest missed one', () => {
    expect(windows(outage('compress', {}, null).fires)[0]).toEqual([0, 8]);
  });

  test('every nominal time in the range gets exactly one decision, whatever the policy', () => {
    for (const policy of ['skip', 'catchup', 'compress'] as const) {
      const seconds = outage(policy, { max_catchup: 2 }).fires.map((fire) => fire.scheduledFor.getUTCSeconds());
      expect(seconds).toEqual([2, 4, 6, 8, 10]);
    }
  });

  test('lateness is recorded per fire time', () => {
    expect(outage('skip').fires.map((fire) => fire.lateByMs)).toEqual([8500, 6500, 4500, 2500, 500]);
  });
});

describe('a resume after an operator pause (fires 02..08 passed while paused, resumed at 09.2 s, grace 1s)', () => {
  // The resume's tick has no nominal time of its own (no tickScheduledFor): it decides what passed up to now.
  const resume = (policy: MisfirePolicy, extra: Partial<CronTrigger> = {}, now = at(9, 200)) =>
    planFires({ trigger: everyTwoSeconds(policy, extra), processedThrough: at(0), lastWindowEnd: at(0), now });

  test('skip: every time that passed while paused is recorded as misfire_skip and nothing runs', () => {
    const plan = resume('skip');
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'misfire_skip'],
      [4, 'skip', 'misfire_skip'],
      [6, 'skip', 'misfire_skip'],
      [8, 'skip', 'misfire_skip'],
    ]);
    expect(plan.lastWindowEnd).toEqual(at(0));
  });

  test('catchup: the max_catchup most recent paused times run in order with their own windows; older ones are catchup_limit', () => {
    const plan = resume('catchup', { max_catchup: 2 });
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'catchup_limit'],
      [4, 'skip', 'catchup_limit'],
      [6, 'run', 'misfire_catchup'],
      [8, 'run', 'misfire_catchup'],
    ]);
    expect(windows(plan.fires)).toEqual([
      [4, 6],
      [6, 8],
    ]);
    expect(plan.lastWindowEnd).toEqual(at(8));
  });

  test('compress: one run for the latest paused time whose window reaches back to the last run before the pause', () => {
    const plan = resume('compress');
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'compressed'],
      [4, 'skip', 'compressed'],
      [6, 'skip', 'compressed'],
      [8, 'run', 'misfire_compress'],
    ]);
    expect(windows(plan.fires)).toEqual([[0, 8]]);
  });

  test('decides up to the moment of the resume and no further: the next nominal time is left to its own tick', () => {
    for (const policy of ['skip', 'catchup', 'compress'] as const) {
      const plan = resume(policy);
      expect(plan.processedThrough).toEqual(at(9, 200));
      expect(plan.fires.map((fire) => fire.scheduledFor.getUTCSeconds())).not.toContain(10);
    }
  });

  test('a time that passed within its grace before the resume runs on time, whatever the policy', () => {
    const plan = resume('skip', {}, at(8, 500));
    expect(summary(plan.fires).at(-1)).toEqual([8, 'run', 'on_time']);
  });
});

describe('an outage longer than the listing limit', () => {
  const long = (policy: MisfirePolicy, lastWindowEnd: Date | null) =>
    planFires({
      trigger: everyTwoSeconds(policy, { max_catchup: 2 }),
      processedThrough: at(0),
      lastWindowEnd,
      now: at(20, 500),
      listLimit: 3,
    });

  test('older missed times are recorded as one range, so none is left without an answer', () => {
    const plan = long('skip', at(0));
    expect(summary(plan.fires)).toEqual([
      [2, 'skip', 'misfire_skip'],
      [16, 'skip', 'misfire_skip'],
      [18, 'skip', 'misfire_skip'],
      [20, 'run', 'on_time'],
    ]);
    const range = plan.fires[0]!;
    expect(range.kind === 'skip' && range.rangeEnd).toEqual(at(14));
  });

  test('a compressed window still reaches back over the times too old to list', () => {
    const plan = long('compress', null);
    expect(windows(plan.fires)).toEqual([
      [0, 18],
      [18, 20],
    ]);
    const range = plan.fires[0]!;
    expect(range.kind === 'skip' && [range.reason, range.coveredBy]).toEqual(['compressed', at(18)]);
  });
});

describe('Temporal and our cron evaluation disagreeing', () => {
  test('a nominal time our evaluation does not produce still runs, and is flagged', () => {
    const trigger: CronTrigger = { ...everyTwoSeconds('skip'), cron: '0 * * * * *' };
    const plan = planFires({
      trigger,
      processedThrough: at(0),
      lastWindowEnd: null,
      tickScheduledFor: at(31),
      now: at(31, 200),
    });
    expect(plan.foreignTickScheduledFor).toBe(true);
    expect(summary(plan.fires)).toEqual([[31, 'run', 'on_time']]);
  });
});

describe('fire ranges', () => {
  test('a range reports its first and last nominal time, or nothing when empty', () => {
    expect(fireRange({ cron: '*/2 * * * * *', timezone: 'UTC' }, at(0), at(9))).toEqual({ first: at(2), last: at(8) });
    expect(fireRange({ cron: '*/2 * * * * *', timezone: 'UTC' }, at(0), at(1))).toBeUndefined();
  });
});
