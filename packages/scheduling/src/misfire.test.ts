import type { MisfirePolicy } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { isLate, planMisfire, type MisfirePlan } from './misfire';

const HOUR_MS = 3_600_000;
const hourly = { cron: '0 * * * *', timezone: 'UTC' };
const at = (value: string): Date => new Date(value);

/** `count` consecutive hourly nominal times, the first at `first`. */
function hours(first: string, count: number): Date[] {
  const start = at(first).getTime();
  return Array.from({ length: count }, (_, index) => new Date(start + index * HOUR_MS));
}

const runTimes = (plan: MisfirePlan): string[] => plan.runs.map((run) => run.scheduledFor.toISOString());
const windows = (plan: MisfirePlan): Array<[string, string]> =>
  plan.runs.map((run) => [run.windowStart.toISOString(), run.windowEnd.toISOString()]);
const skips = (plan: MisfirePlan): Array<[string, string]> =>
  plan.skipped.map((skip) => [skip.scheduledFor.toISOString(), skip.reason]);

describe('policy skip', () => {
  test('no missed fires plan nothing', () => {
    expect(planMisfire({ policy: 'skip', missed: [], maxCatchup: 10, trigger: hourly })).toEqual({
      runs: [],
      skipped: [],
    });
  });

  test('one missed fire gets no run and is recorded as skipped', () => {
    const plan = planMisfire({
      policy: 'skip',
      missed: hours('2026-03-02T10:00:00Z', 1),
      maxCatchup: 10,
      trigger: hourly,
    });
    expect(plan.runs).toEqual([]);
    expect(skips(plan)).toEqual([['2026-03-02T10:00:00.000Z', 'misfire_skip']]);
  });

  test.each([3, 10, 15])('%i missed fires all get skipped whatever max_catchup says', (count) => {
    const missed = hours('2026-03-02T10:00:00Z', count);
    const plan = planMisfire({ policy: 'skip', missed, maxCatchup: 10, trigger: hourly });
    expect(plan.runs).toEqual([]);
    expect(plan.skipped).toEqual(missed.map((scheduledFor) => ({ scheduledFor, reason: 'misfire_skip' })));
  });
});

describe('policy catchup', () => {
  test('no missed fires plan nothing', () => {
    expect(planMisfire({ policy: 'catchup', missed: [], maxCatchup: 10, trigger: hourly })).toEqual({
      runs: [],
      skipped: [],
    });
  });

  test('one missed fire runs with the window since the last completed one', () => {
    const plan = planMisfire({
      policy: 'catchup',
      missed: hours('2026-03-02T10:00:00Z', 1),
      maxCatchup: 10,
      lastWindowEnd: at('2026-03-02T09:00:00Z'),
      trigger: hourly,
    });
    expect(windows(plan)).toEqual([['2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z']]);
    expect(plan.skipped).toEqual([]);
  });

  test('without lastWindowEnd the oldest run starts its window at the nominal time before it', () => {
    const plan = planMisfire({
      policy: 'catchup',
      missed: hours('2026-03-02T10:00:00Z', 2),
      maxCatchup: 10,
      trigger: hourly,
    });
    expect(windows(plan)).toEqual([
      ['2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z'],
      ['2026-03-02T10:00:00.000Z', '2026-03-02T11:00:00.000Z'],
    ]);
  });

  test('a catchup of 5 missed fires under a limit of 10 runs all 5 in order, each with its own window', () => {
    const plan = planMisfire({
      policy: 'catchup',
      missed: hours('2026-03-02T10:00:00Z', 5),
      maxCatchup: 10,
      lastWindowEnd: at('2026-03-02T09:00:00Z'),
      trigger: hourly,
    });
    expect(runTimes(plan)).toEqual(hours('2026-03-02T10:00:00Z', 5).map((date) => date.toISOString()));
    expect(windows(plan)).toEqual([
      ['2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z'],
      ['2026-03-02T10:00:00.000Z', '2026-03-02T11:00:00.000Z'],
      ['2026-03-02T11:00:00.000Z', '2026-03-02T12:00:00.000Z'],
      ['2026-03-02T12:00:00.000Z', '2026-03-02T13:00:00.000Z'],
      ['2026-03-02T13:00:00.000Z', '2026-03-02T14:00:00.000Z'],
    ]);
    expect(plan.skipped).toEqual([]);
  });

  test('a catchup of exactly max_catchup missed fires runs them all and skips none', () => {
    const missed = hours('2026-03-02T10:00:00Z', 10);
    const plan = planMisfire({ policy: 'catchup', missed, maxCatchup: 10, trigger: hourly });
    expect(plan.runs.map((run) => run.scheduledFor)).toEqual(missed);
    expect(plan.skipped).toEqual([]);
  });

  test('a catchup after 15 missed fires runs the latest 10 and records 5 as skipped', () => {
    const missed = hours('2026-03-02T00:00:00Z', 15);
    const plan = planMisfire({
      policy: 'catchup',
      missed,
      maxCatchup: 10,
      lastWindowEnd: at('2026-03-01T23:00:00Z'),
      trigger: hourly,
    });
    expect(plan.runs.map((run) => run.scheduledFor)).toEqual(missed.slice(5));
    expect(skips(plan)).toEqual(missed.slice(0, 5).map((date) => [date.toISOString(), 'catchup_limit']));
    // The oldest run that does run starts where the newest skipped interval starts, not at lastWindowEnd.
    expect(windows(plan)[0]).toEqual(['2026-03-02T04:00:00.000Z', '2026-03-02T05:00:00.000Z']);
  });

  test('catch-up windows follow each other with no gap or overlap', () => {
    const plan = planMisfire({
      policy: 'catchup',
      missed: hours('2026-03-02T00:00:00Z', 12),
      maxCatchup: 4,
      trigger: hourly,
    });
    for (let i = 1; i < plan.runs.length; i++) {
      expect(plan.runs[i]?.windowStart).toEqual(plan.runs[i - 1]?.windowEnd);
    }
  });

  test('a max_catchup of 1 runs only the latest missed fire', () => {
    const plan = planMisfire({
      policy: 'catchup',
      missed: hours('2026-03-02T10:00:00Z', 3),
      maxCatchup: 1,
      trigger: hourly,
    });
    expect(windows(plan)).toEqual([['2026-03-02T11:00:00.000Z', '2026-03-02T12:00:00.000Z']]);
    expect(skips(plan).map(([, reason]) => reason)).toEqual(['catchup_limit', 'catchup_limit']);
  });

  test('a lastWindowEnd further back than the previous nominal time widens the oldest run window', () => {
    // e.g. the schedule was disabled for a while: the oldest run covers everything since the last one that ran.
    const plan = planMisfire({
      policy: 'catchup',
      missed: hours('2026-03-02T10:00:00Z', 2),
      maxCatchup: 10,
      lastWindowEnd: at('2026-03-01T10:00:00Z'),
      trigger: hourly,
    });
    expect(windows(plan)[0]).toEqual(['2026-03-01T10:00:00.000Z', '2026-03-02T10:00:00.000Z']);
  });
});

describe('policy compress', () => {
  test('no missed fires plan nothing', () => {
    expect(planMisfire({ policy: 'compress', missed: [], maxCatchup: 10, trigger: hourly })).toEqual({
      runs: [],
      skipped: [],
    });
  });

  test('one missed fire becomes one ordinary run with nothing compressed', () => {
    const plan = planMisfire({
      policy: 'compress',
      missed: hours('2026-03-02T10:00:00Z', 1),
      maxCatchup: 10,
      trigger: hourly,
    });
    expect(windows(plan)).toEqual([['2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z']]);
    expect(plan.skipped).toEqual([]);
  });

  test.each([5, 10, 15])(
    '%i missed fires become exactly one run for the latest, whatever max_catchup says',
    (count) => {
      const missed = hours('2026-03-02T10:00:00Z', count);
      const latest = missed.at(-1) as Date;
      const plan = planMisfire({
        policy: 'compress',
        missed,
        maxCatchup: 10,
        lastWindowEnd: at('2026-03-02T09:00:00Z'),
        trigger: hourly,
      });
      expect(plan.runs).toEqual([{ scheduledFor: latest, windowStart: at('2026-03-02T09:00:00Z'), windowEnd: latest }]);
      expect(plan.skipped).toEqual(missed.slice(0, -1).map((scheduledFor) => ({ scheduledFor, reason: 'compressed' })));
    },
  );

  test('the compressed window starts where the last completed window ended when that is known', () => {
    const plan = planMisfire({
      policy: 'compress',
      missed: hours('2026-03-02T10:00:00Z', 3),
      maxCatchup: 10,
      lastWindowEnd: at('2026-03-02T06:00:00Z'),
      trigger: hourly,
    });
    expect(windows(plan)).toEqual([['2026-03-02T06:00:00.000Z', '2026-03-02T12:00:00.000Z']]);
  });

  test('without lastWindowEnd the compressed window starts at the nominal time before the oldest missed fire', () => {
    const plan = planMisfire({
      policy: 'compress',
      missed: hours('2026-03-02T10:00:00Z', 3),
      maxCatchup: 10,
      trigger: hourly,
    });
    expect(windows(plan)).toEqual([['2026-03-02T09:00:00.000Z', '2026-03-02T12:00:00.000Z']]);
  });

  test('without lastWindowEnd the compressed window reaches back over a skipped spring-forward day', () => {
    const twoThirtyParis = { cron: '30 2 * * *', timezone: 'Europe/Paris' };
    const missed = [at('2026-03-28T01:30:00Z'), at('2026-03-30T00:30:00Z')]; // no 02:30 on 2026-03-29
    const plan = planMisfire({ policy: 'compress', missed, maxCatchup: 10, trigger: twoThirtyParis });
    expect(windows(plan)).toEqual([['2026-03-27T01:30:00.000Z', '2026-03-30T00:30:00.000Z']]);
  });
});

describe('every plan accounts for every missed fire exactly once', () => {
  const policies: MisfirePolicy[] = ['skip', 'catchup', 'compress'];
  const counts = [0, 1, 9, 10, 11, 25];

  test.each(policies.flatMap((policy) => counts.map((count) => [policy, count] as const)))(
    'policy %s with %i missed fires: runs and skips partition the missed times, ascending',
    (policy, count) => {
      const missed = hours('2026-03-02T00:00:00Z', count);
      const plan = planMisfire({ policy, missed, maxCatchup: 10, trigger: hourly });
      const accounted = [...plan.runs.map((run) => run.scheduledFor), ...plan.skipped.map((skip) => skip.scheduledFor)];
      expect(accounted.map((date) => date.getTime()).sort((a, b) => a - b)).toEqual(
        missed.map((date) => date.getTime()),
      );
      for (const run of plan.runs) {
        expect(run.windowEnd).toEqual(run.scheduledFor);
        expect(run.windowStart.getTime()).toBeLessThan(run.windowEnd.getTime());
      }
    },
  );
});

describe('invalid misfire input', () => {
  test('missed times out of order are rejected', () => {
    const missed = [at('2026-03-02T11:00:00Z'), at('2026-03-02T10:00:00Z')];
    expect(() => planMisfire({ policy: 'catchup', missed, maxCatchup: 10, trigger: hourly })).toThrow(
      /strictly ascending/,
    );
  });

  test('a missed time listed twice is rejected', () => {
    const missed = [at('2026-03-02T10:00:00Z'), at('2026-03-02T10:00:00Z')];
    expect(() => planMisfire({ policy: 'compress', missed, maxCatchup: 10, trigger: hourly })).toThrow(RangeError);
  });

  test('a lastWindowEnd at or after the oldest missed time is rejected: that time was inside a completed window', () => {
    const missed = hours('2026-03-02T10:00:00Z', 2);
    expect(() =>
      planMisfire({
        policy: 'compress',
        missed,
        maxCatchup: 10,
        lastWindowEnd: at('2026-03-02T10:00:00Z'),
        trigger: hourly,
      }),
    ).toThrow(/lastWindowEnd/);
  });

  test('a max_catchup below 1 is rejected', () => {
    expect(() => planMisfire({ policy: 'catchup', missed: [], maxCatchup: 0, trigger: hourly })).toThrow(RangeError);
  });
});

describe('lateness', () => {
  const nominal = at('2026-03-02T09:00:00Z');

  test('a fire that starts exactly at the end of its grace is on time', () => {
    expect(isLate(nominal, at('2026-03-02T09:01:00Z'), '60s')).toBe(false);
  });

  test('a fire that starts a millisecond after its grace is late', () => {
    expect(isLate(nominal, at('2026-03-02T09:01:00.001Z'), '60s')).toBe(true);
  });

  test('a fire that starts early (clock skew) is not late', () => {
    expect(isLate(nominal, at('2026-03-02T08:59:59Z'), '60s')).toBe(false);
  });

  test('with no grace any delay is late', () => {
    expect(isLate(nominal, at('2026-03-02T09:00:00.001Z'), '0s')).toBe(true);
  });

  test('jitter delays fires on purpose and so extends the grace', () => {
    expect(isLate(nominal, at('2026-03-02T09:05:30Z'), '60s')).toBe(true);
    expect(isLate(nominal, at('2026-03-02T09:05:30Z'), '60s', '5m')).toBe(false);
    expect(isLate(nominal, at('2026-03-02T09:06:00.001Z'), '60s', '5m')).toBe(true);
  });

  test('a grace that is not a duration is rejected', () => {
    expect(() => isLate(nominal, nominal, '60')).toThrow(/not a duration/);
  });
});
