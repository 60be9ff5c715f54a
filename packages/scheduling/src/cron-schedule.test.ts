import { Cron } from 'croner';
import { describe, expect, test } from 'vitest';
import {
  assertValidCronSpec,
  fireTimesBetween,
  InvalidCronError,
  nextFireTimes,
  previousFireTime,
} from './cron-schedule';

const iso = (dates: readonly Date[]): string[] => dates.map((date) => date.toISOString());
const at = (value: string): Date => new Date(value);

const UTC = 'UTC';
const PARIS = 'Europe/Paris';

describe('next fire times', () => {
  test('a weekday 09:00 trigger asked on a Friday evening fires Monday to Friday of the next week', () => {
    const fridayEvening = at('2026-03-06T18:00:00Z');
    expect(iso(nextFireTimes({ cron: '0 9 * * MON-FRI', timezone: UTC }, fridayEvening, 5))).toEqual([
      '2026-03-09T09:00:00.000Z',
      '2026-03-10T09:00:00.000Z',
      '2026-03-11T09:00:00.000Z',
      '2026-03-12T09:00:00.000Z',
      '2026-03-13T09:00:00.000Z',
    ]);
  });

  test('the same weekday trigger read in Paris in winter fires at 08:00 UTC', () => {
    const fridayEvening = at('2026-03-06T18:00:00Z');
    const times = nextFireTimes({ cron: '0 9 * * MON-FRI', timezone: PARIS }, fridayEvening, 5);
    expect(iso(times)).toEqual([
      '2026-03-09T08:00:00.000Z',
      '2026-03-10T08:00:00.000Z',
      '2026-03-11T08:00:00.000Z',
      '2026-03-12T08:00:00.000Z',
      '2026-03-13T08:00:00.000Z',
    ]);
  });

  test('a fire exactly at the reference instant is not returned: times are strictly after it', () => {
    const [first] = nextFireTimes({ cron: '0 9 * * *', timezone: UTC }, at('2026-03-02T09:00:00Z'), 1);
    expect(first?.toISOString()).toBe('2026-03-03T09:00:00.000Z');
  });

  test('a reference with milliseconds yields whole-second times strictly after it', () => {
    expect(iso(nextFireTimes({ cron: '0 9 * * *', timezone: UTC }, at('2026-03-02T08:59:59.999Z'), 1))).toEqual([
      '2026-03-02T09:00:00.000Z',
    ]);
    expect(iso(nextFireTimes({ cron: '0 9 * * *', timezone: UTC }, at('2026-03-02T09:00:00.001Z'), 1))).toEqual([
      '2026-03-03T09:00:00.000Z',
    ]);
  });

  test('a 5-field expression fires at second 0 of the minute', () => {
    expect(iso(nextFireTimes({ cron: '*/20 * * * *', timezone: UTC }, at('2026-03-02T09:00:30Z'), 3))).toEqual([
      '2026-03-02T09:20:00.000Z',
      '2026-03-02T09:40:00.000Z',
      '2026-03-02T10:00:00.000Z',
    ]);
  });

  test('a 6-field expression reads its first field as seconds', () => {
    expect(iso(nextFireTimes({ cron: '*/15 * * * * *', timezone: UTC }, at('2026-03-02T09:00:00Z'), 4))).toEqual([
      '2026-03-02T09:00:15.000Z',
      '2026-03-02T09:00:30.000Z',
      '2026-03-02T09:00:45.000Z',
      '2026-03-02T09:01:00.000Z',
    ]);
    expect(iso(nextFireTimes({ cron: '30 0 9 * * *', timezone: UTC }, at('2026-03-02T00:00:00Z'), 2))).toEqual([
      '2026-03-02T09:00:30.000Z',
      '2026-03-03T09:00:30.000Z',
    ]);
  });

  test('day-of-month and day-of-week must both match, as in Temporal (only Friday the 13th fires)', () => {
    expect(iso(nextFireTimes({ cron: '0 0 13 * FRI', timezone: UTC }, at('2026-01-01T00:00:00Z'), 3))).toEqual([
      '2026-02-13T00:00:00.000Z',
      '2026-03-13T00:00:00.000Z',
      '2026-11-13T00:00:00.000Z',
    ]);
  });

  test('asking for zero fire times returns none', () => {
    expect(nextFireTimes({ cron: '* * * * *', timezone: UTC }, at('2026-03-02T00:00:00Z'), 0)).toEqual([]);
  });

  test('an expression that can never match returns fewer times than asked for', () => {
    expect(nextFireTimes({ cron: '0 0 30 2 *', timezone: UTC }, at('2026-01-01T00:00:00Z'), 5)).toEqual([]);
  });

  test('whitespace around and between fields does not matter', () => {
    const times = nextFireTimes({ cron: '  0   9 * *  MON-FRI ', timezone: UTC }, at('2026-03-06T18:00:00Z'), 1);
    expect(iso(times)).toEqual(['2026-03-09T09:00:00.000Z']);
  });
});

describe('invalid input', () => {
  test('a 7-field expression is rejected: years are not part of the contract', () => {
    expect(() => nextFireTimes({ cron: '0 0 9 * * * 2026', timezone: UTC }, at('2026-01-01T00:00:00Z'), 1)).toThrow(
      InvalidCronError,
    );
  });

  test('an out-of-range field is rejected with the expression the user wrote in the message', () => {
    expect(() => assertValidCronSpec({ cron: '61 * * * *', timezone: UTC })).toThrow(/"61 \* \* \* \*"/);
  });

  test('an unknown timezone is rejected by name', () => {
    expect(() => previousFireTime({ cron: '0 9 * * *', timezone: 'Mars/Olympus' }, at('2026-01-01T00:00:00Z'))).toThrow(
      /unknown IANA timezone: Mars\/Olympus/,
    );
  });

  test('the error carries a stable code for the API error mapper', () => {
    try {
      assertValidCronSpec({ cron: 'not a cron', timezone: UTC });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidCronError);
      expect((error as InvalidCronError).code).toBe('invalid_cron');
    }
  });

  test('a negative count, a fractional limit and an invalid date are programming errors', () => {
    const spec = { cron: '0 9 * * *', timezone: UTC };
    expect(() => nextFireTimes(spec, at('2026-01-01T00:00:00Z'), -1)).toThrow(RangeError);
    expect(() => fireTimesBetween(spec, at('2026-01-01T00:00:00Z'), at('2026-01-02T00:00:00Z'), 1.5)).toThrow(
      RangeError,
    );
    expect(() => previousFireTime(spec, new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe('daylight saving time (Europe/Paris: 2026-03-29 spring forward at 02:00, 2026-10-25 fall back at 03:00)', () => {
  const twoThirty = { cron: '30 2 * * *', timezone: PARIS };

  test('on the spring-forward day `30 2 * * *` does not fire at all, because 02:30 does not exist', () => {
    expect(iso(nextFireTimes(twoThirty, at('2026-03-27T12:00:00Z'), 3))).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-30T00:30:00.000Z', // 02:30 CEST; 2026-03-29 is skipped
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  test('on the fall-back day `30 2 * * *` fires twice, once for each 02:30', () => {
    expect(iso(nextFireTimes(twoThirty, at('2026-10-24T12:00:00Z'), 3))).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:30:00.000Z', // 02:30 CET, an hour later
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  test('this matches Temporal Schedules, not croner defaults: croner alone fires at 03:00 on spring forward and once on fall back', () => {
    // Documented so nobody swaps in a bare croner call: its "fixed-time" DST rule disagrees with what Temporal fires.
    const bare = new Cron('30 2 * * *', { timezone: PARIS, paused: true });
    expect(iso(bare.nextRuns(3, at('2026-03-27T12:00:00Z')))).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z', // 03:00 CEST, the first instant after the gap
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(iso(bare.nextRuns(3, at('2026-10-24T12:00:00Z')))).toEqual([
      '2026-10-25T00:30:00.000Z', // only the first 02:30
      '2026-10-26T01:30:00.000Z',
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  test('a 09:00 trigger stays at 09:00 on the wall clock, so its UTC time moves by an hour', () => {
    expect(iso(nextFireTimes({ cron: '0 9 * * *', timezone: PARIS }, at('2026-03-28T00:00:00Z'), 3))).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
    ]);
  });

  test('an hourly trigger fires 23 times on the spring-forward day and 25 times on the fall-back day', () => {
    const hourly = { cron: '0 * * * *', timezone: PARIS };
    // Local midnight to local midnight, as (exclusive, inclusive] ranges ending one second before midnight.
    const spring = fireTimesBetween(hourly, at('2026-03-28T22:59:59Z'), at('2026-03-29T21:59:59Z'), 100);
    const autumn = fireTimesBetween(hourly, at('2026-10-24T21:59:59Z'), at('2026-10-25T22:59:59Z'), 100);
    expect(spring.times).toHaveLength(23);
    expect(autumn.times).toHaveLength(25);
  });

  test('a sub-hourly trigger skips the missing hour and repeats the doubled one', () => {
    const everyTwentyAtTwo = { cron: '*/20 2 * * *', timezone: PARIS };
    expect(
      fireTimesBetween(everyTwentyAtTwo, at('2026-03-28T23:00:00Z'), at('2026-03-29T22:00:00Z'), 10).times,
    ).toEqual([]);
    expect(
      iso(fireTimesBetween(everyTwentyAtTwo, at('2026-10-24T22:00:00Z'), at('2026-10-25T23:00:00Z'), 10).times),
    ).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:20:00.000Z',
      '2026-10-25T00:40:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:20:00.000Z',
      '2026-10-25T01:40:00.000Z',
    ]);
  });

  test('the same rules hold in New York (2026-03-08 spring forward, 2026-11-01 fall back)', () => {
    const newYork = { cron: '30 2 * * *', timezone: 'America/New_York' };
    expect(iso(nextFireTimes(newYork, at('2026-03-07T00:00:00Z'), 2))).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    const oneThirty = { cron: '30 1 * * *', timezone: 'America/New_York' };
    expect(iso(nextFireTimes(oneThirty, at('2026-10-31T12:00:00Z'), 3))).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T06:30:00.000Z', // 01:30 EST
      '2026-11-02T06:30:00.000Z',
    ]);
  });
});

describe('previous fire time', () => {
  test('the previous fire time is strictly before the reference', () => {
    expect(previousFireTime({ cron: '0 9 * * *', timezone: UTC }, at('2026-03-02T09:00:00Z'))?.toISOString()).toBe(
      '2026-03-01T09:00:00.000Z',
    );
    expect(previousFireTime({ cron: '0 9 * * *', timezone: UTC }, at('2026-03-02T09:00:00.001Z'))?.toISOString()).toBe(
      '2026-03-02T09:00:00.000Z',
    );
  });

  test('the previous fire of a weekday trigger on a Monday is the Friday before', () => {
    expect(
      previousFireTime({ cron: '0 9 * * MON-FRI', timezone: UTC }, at('2026-03-09T09:00:00Z'))?.toISOString(),
    ).toBe('2026-03-06T09:00:00.000Z');
  });

  test('after the skipped spring-forward day, the previous fire of `30 2 * * *` is two days back', () => {
    expect(previousFireTime({ cron: '30 2 * * *', timezone: PARIS }, at('2026-03-30T00:30:00Z'))?.toISOString()).toBe(
      '2026-03-28T01:30:00.000Z',
    );
  });

  test('the second 02:30 of the fall-back day has the first one as its predecessor', () => {
    const twoThirty = { cron: '30 2 * * *', timezone: PARIS };
    expect(previousFireTime(twoThirty, at('2026-10-25T01:30:00Z'))?.toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(previousFireTime(twoThirty, at('2026-10-26T01:30:00Z'))?.toISOString()).toBe('2026-10-25T01:30:00.000Z');
  });

  test('an expression that never matched before the reference has no previous fire time', () => {
    expect(previousFireTime({ cron: '0 0 30 2 *', timezone: UTC }, at('2026-01-01T00:00:00Z'))).toBeNull();
  });

  const DAY_MS = 86_400_000;
  const SPRING_FORWARD = at('2026-03-29T01:00:00Z');
  const FALL_BACK = at('2026-10-25T01:00:00Z');

  // [expression, days either side of each change]: enough for at least one fire on each side.
  test.each([
    ['30 2 * * *', 3],
    ['0 * * * *', 1],
    ['*/20 1-3 * * *', 2],
    ['15 30 2 * * SUN', 8],
    ['0 9 * * MON-FRI', 4],
    ['0 0,12 * * *', 2],
  ] as const)(
    'windows tile the timeline across both DST changes for `%s`: each fire is preceded by the fire before it',
    (cron, days) => {
      const spec = { cron, timezone: PARIS };
      for (const change of [SPRING_FORWARD, FALL_BACK]) {
        const from = new Date(change.getTime() - days * DAY_MS);
        const to = new Date(change.getTime() + days * DAY_MS);
        const { times, truncated } = fireTimesBetween(spec, from, to, 500);
        expect(truncated).toBe(false);
        expect(times.length).toBeGreaterThan(1);
        for (let i = 1; i < times.length; i++) {
          expect(previousFireTime(spec, times[i] as Date)).toEqual(times[i - 1]);
        }
      }
    },
  );
});

describe('fire times in a range', () => {
  const hourly = { cron: '0 * * * *', timezone: UTC };

  test('a range excludes its start and includes its end', () => {
    const { times, truncated } = fireTimesBetween(hourly, at('2026-03-02T09:00:00Z'), at('2026-03-02T12:00:00Z'), 10);
    expect(iso(times)).toEqual(['2026-03-02T10:00:00.000Z', '2026-03-02T11:00:00.000Z', '2026-03-02T12:00:00.000Z']);
    expect(truncated).toBe(false);
  });

  test('consecutive ranges chain with no overlap and no gap', () => {
    const first = fireTimesBetween(hourly, at('2026-03-02T00:00:00Z'), at('2026-03-02T05:00:00Z'), 10).times;
    const second = fireTimesBetween(hourly, at('2026-03-02T05:00:00Z'), at('2026-03-02T10:00:00Z'), 10).times;
    const whole = fireTimesBetween(hourly, at('2026-03-02T00:00:00Z'), at('2026-03-02T10:00:00Z'), 20).times;
    expect([...first, ...second]).toEqual(whole);
  });

  test('an empty or reversed range holds no fire times', () => {
    expect(fireTimesBetween(hourly, at('2026-03-02T09:00:00Z'), at('2026-03-02T09:00:00Z'), 10)).toEqual({
      times: [],
      truncated: false,
    });
    expect(fireTimesBetween(hourly, at('2026-03-02T12:00:00Z'), at('2026-03-02T09:00:00Z'), 10)).toEqual({
      times: [],
      truncated: false,
    });
    expect(fireTimesBetween(hourly, at('2026-03-02T09:00:01Z'), at('2026-03-02T09:59:59Z'), 10)).toEqual({
      times: [],
      truncated: false,
    });
  });

  test('a per-second expression over a whole year stops at the limit and says it was truncated', () => {
    const everySecond = { cron: '* * * * * *', timezone: UTC };
    const started = performance.now();
    const { times, truncated } = fireTimesBetween(
      everySecond,
      at('2026-01-01T00:00:00Z'),
      at('2027-01-01T00:00:00Z'),
      100,
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(truncated).toBe(true);
    expect(times).toHaveLength(100);
    expect(times[0]?.toISOString()).toBe('2026-01-01T00:00:01.000Z');
    expect(times[99]?.toISOString()).toBe('2026-01-01T00:01:40.000Z');
  });

  test('a range holding exactly `limit` fire times is not truncated', () => {
    const { times, truncated } = fireTimesBetween(hourly, at('2026-03-02T09:00:00Z'), at('2026-03-02T12:00:00Z'), 3);
    expect(times).toHaveLength(3);
    expect(truncated).toBe(false);
  });

  test('keeping the latest returns the most recent fire times, ascending, when the range is truncated', () => {
    const everySecond = { cron: '* * * * * *', timezone: UTC };
    const { times, truncated } = fireTimesBetween(
      everySecond,
      at('2026-01-01T00:00:00Z'),
      at('2026-03-02T12:00:00Z'),
      3,
      'latest',
    );
    expect(truncated).toBe(true);
    expect(iso(times)).toEqual(['2026-03-02T11:59:58.000Z', '2026-03-02T11:59:59.000Z', '2026-03-02T12:00:00.000Z']);
  });

  test('keeping the latest includes the end of the range and excludes its start', () => {
    const { times } = fireTimesBetween(hourly, at('2026-03-02T09:00:00Z'), at('2026-03-02T12:00:00Z'), 10, 'latest');
    expect(iso(times)).toEqual(['2026-03-02T10:00:00.000Z', '2026-03-02T11:00:00.000Z', '2026-03-02T12:00:00.000Z']);
  });

  test('keeping the earliest or the latest gives the same times when the range fits the limit', () => {
    const spec = { cron: '30 2 * * *', timezone: PARIS };
    const earliest = fireTimesBetween(spec, at('2026-10-20T00:00:00Z'), at('2026-10-30T00:00:00Z'), 20);
    const latest = fireTimesBetween(spec, at('2026-10-20T00:00:00Z'), at('2026-10-30T00:00:00Z'), 20, 'latest');
    expect(latest).toEqual(earliest);
    expect(earliest.times).toHaveLength(11); // ten days, one of them with two 02:30s
  });

  test('a limit of zero returns nothing and reports whether anything was left out', () => {
    expect(fireTimesBetween(hourly, at('2026-03-02T09:00:00Z'), at('2026-03-02T12:00:00Z'), 0)).toEqual({
      times: [],
      truncated: true,
    });
    expect(fireTimesBetween(hourly, at('2026-03-02T09:00:00Z'), at('2026-03-02T09:30:00Z'), 0, 'latest')).toEqual({
      times: [],
      truncated: false,
    });
  });
});
