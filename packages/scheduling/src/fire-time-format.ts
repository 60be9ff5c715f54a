/**
 * Renders a fire time on a trigger's wall clock, for people: the `local` half
 * of the API's "next fire times in UTC and local". The UTC half, and every
 * other fire-time string, is `formatScheduledFor` in
 * `@activity-core/contracts`, the only producer of the canonical
 * `scheduled_for` form. Pure; safe in workflow code.
 */
import { toScheduledFor } from '@activity-core/contracts';

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      // h23, not hour12: false, which renders midnight as "24" in some ICU versions.
      hourCycle: 'h23',
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

function formatOffset(offsetSeconds: number): string {
  const sign = offsetSeconds < 0 ? '-' : '+';
  const abs = Math.abs(offsetSeconds);
  const hours = Math.floor(abs / 3600);
  const minutes = Math.floor((abs % 3600) / 60);
  const seconds = abs % 60;
  // Like Python's isoformat(): seconds only for historical zones that had them.
  return `${sign}${pad(hours)}:${pad(minutes)}${seconds === 0 ? '' : `:${pad(seconds)}`}`;
}

/**
 * ISO 8601 local time of `instant` in `timezone`, with the offset in force at
 * that instant (`2026-03-02T09:00:00+01:00`). Whole seconds, like
 * `scheduled_for`. The two occurrences of a repeated DST hour differ only in
 * their offset (`02:30:00+02:00`, then `02:30:00+01:00`).
 */
export function formatLocalTime(instant: Date, timezone: string): string {
  const ms = instant.getTime();
  if (Number.isNaN(ms)) throw new RangeError('instant is not a valid Date');
  // The same whole second as the instant's scheduled_for.
  const wholeSeconds = toScheduledFor(instant).getTime();
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timezone).formatToParts(new Date(wholeSeconds))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = parts;
  // setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
  const wallClockAsUtc = new Date(0).setUTCFullYear(year, month - 1, day) + ((hour * 60 + minute) * 60 + second) * 1000;
  const offsetSeconds = Math.round((wallClockAsUtc - wholeSeconds) / 1000);
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(hour)}:${pad(minute)}:${pad(second)}${formatOffset(offsetSeconds)}`;
}
