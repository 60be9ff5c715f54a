import { formatScheduledFor } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { nextFireTimes } from './cron-schedule';
import { formatLocalTime } from './fire-time-format';

const at = (value: string): Date => new Date(value);

describe('fire times for people', () => {
  test('a winter fire in Paris shows 08:00 UTC as 09:00+01:00', () => {
    expect(formatLocalTime(at('2026-03-02T08:00:00Z'), 'Europe/Paris')).toBe('2026-03-02T09:00:00+01:00');
  });

  test('a summer fire in Paris carries the summer offset', () => {
    expect(formatLocalTime(at('2026-07-01T07:00:00Z'), 'Europe/Paris')).toBe('2026-07-01T09:00:00+02:00');
  });

  test('the two 02:30s of the fall-back day differ only in their offset', () => {
    expect(formatLocalTime(at('2026-10-25T00:30:00Z'), 'Europe/Paris')).toBe('2026-10-25T02:30:00+02:00');
    expect(formatLocalTime(at('2026-10-25T01:30:00Z'), 'Europe/Paris')).toBe('2026-10-25T02:30:00+01:00');
  });

  test('a UTC trigger shows +00:00, never Z', () => {
    expect(formatLocalTime(at('2026-03-02T08:00:00Z'), 'UTC')).toBe('2026-03-02T08:00:00+00:00');
  });

  test('negative, half-hour and quarter-hour offsets are rendered as ±HH:MM', () => {
    expect(formatLocalTime(at('2026-01-15T14:00:00Z'), 'America/New_York')).toBe('2026-01-15T09:00:00-05:00');
    expect(formatLocalTime(at('2026-01-15T14:00:00Z'), 'Asia/Kolkata')).toBe('2026-01-15T19:30:00+05:30');
    expect(formatLocalTime(at('2026-01-15T14:00:00Z'), 'Asia/Kathmandu')).toBe('2026-01-15T19:45:00+05:45');
  });

  test('local midnight is hour 00 of the new day, not hour 24', () => {
    expect(formatLocalTime(at('2026-03-01T23:00:00Z'), 'Europe/Paris')).toBe('2026-03-02T00:00:00+01:00');
  });

  test('milliseconds are dropped, as in scheduled_for', () => {
    expect(formatLocalTime(at('2026-03-02T08:00:00.999Z'), 'Europe/Paris')).toBe('2026-03-02T09:00:00+01:00');
  });

  test('the next 5 fire times of a Paris weekday trigger across the spring change read 09:00 locally every day', () => {
    const spec = { cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris' };
    const views = nextFireTimes(spec, at('2026-03-26T12:00:00Z'), 5).map((time) => ({
      utc: formatScheduledFor(time),
      local: formatLocalTime(time, spec.timezone),
    }));
    expect(views).toEqual([
      { utc: '2026-03-27T08:00:00+00:00', local: '2026-03-27T09:00:00+01:00' },
      { utc: '2026-03-30T07:00:00+00:00', local: '2026-03-30T09:00:00+02:00' },
      { utc: '2026-03-31T07:00:00+00:00', local: '2026-03-31T09:00:00+02:00' },
      { utc: '2026-04-01T07:00:00+00:00', local: '2026-04-01T09:00:00+02:00' },
      { utc: '2026-04-02T07:00:00+00:00', local: '2026-04-02T09:00:00+02:00' },
    ]);
  });

  test('an unknown timezone is rejected', () => {
    expect(() => formatLocalTime(at('2026-03-02T08:00:00Z'), 'Mars/Olympus')).toThrow(RangeError);
  });
});
