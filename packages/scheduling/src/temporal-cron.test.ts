import { describe, expect, test } from 'vitest';
import { InvalidCronError } from './cron-schedule';
import { toTemporalCronString } from './temporal-cron';

describe('cron strings for Temporal Schedules', () => {
  test('a 5-field expression is passed through, with its whitespace normalised', () => {
    expect(toTemporalCronString(' 0  9 * * MON-FRI ')).toBe('0 9 * * MON-FRI');
  });

  test('a 6-field expression gets a year wildcard so Temporal reads the first field as seconds, not minutes', () => {
    // Temporal's own 6-field form is minute..year; 7 fields is second..year.
    expect(toTemporalCronString('30 0 9 * * *')).toBe('30 0 9 * * * *');
  });

  test('values, names, ranges, steps and lists are accepted', () => {
    expect(toTemporalCronString('*/15 0-30/5 8-18 1,15 JAN-MAR,dec sun,6')).toBe(
      '*/15 0-30/5 8-18 1,15 JAN-MAR,dec sun,6 *',
    );
  });

  test.each([
    ['0 0 L * *', 'day-of-month'],
    ['0 0 15W * *', 'day-of-month'],
    ['0 0 * * FRI#2', 'day-of-week'],
    ['0 0 * * 5L', 'day-of-week'],
    ['0 0 ? * MON', 'day-of-month'],
  ])('croner-only syntax `%s` is rejected before it reaches Temporal (%s)', (cron, field) => {
    expect(() => toTemporalCronString(cron)).toThrow(InvalidCronError);
    expect(() => toTemporalCronString(cron)).toThrow(new RegExp(`${field} .*Temporal Schedules do not support`));
  });

  test('an invalid expression is rejected as invalid, not as unsupported', () => {
    expect(() => toTemporalCronString('0 25 * * *')).toThrow(/invalid cron expression/);
  });
});
