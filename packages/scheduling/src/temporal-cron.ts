/**
 * Translating a trigger's cron expression for a Temporal Schedule.
 *
 * Temporal reads cron strings differently from our contract: its 6-field form
 * is `minute hour day month weekday YEAR`, while ours has a leading SECOND
 * (7 fields in Temporal's terms). It also knows only `*`, values, ranges,
 * steps, lists and English names; croner's extensions (`L`, `W`, `#`, `?`, a
 * `+` weekday prefix) would be rejected by the server, or worse, read
 * differently. Pure.
 */
import { assertValidCronSpec, InvalidCronError } from './cron-schedule';

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** Field names of the 6-field form, for messages. */
const FIELD_NAMES = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;

function isPortableValue(value: string, names: readonly string[]): boolean {
  return /^\d{1,2}$/.test(value) || names.includes(value.toUpperCase());
}

/** `*`, `*\/n`, `v`, `v-w` or `v-w/n`, where v and w are numbers or (in month and weekday fields) names. */
function isPortableToken(token: string, names: readonly string[]): boolean {
  const [range = '', step, ...rest] = token.split('/');
  if (rest.length > 0) return false;
  if (step !== undefined && !/^\d{1,2}$/.test(step)) return false;
  if (range === '*') return true;
  const bounds = range.split('-');
  if (bounds.length === 1) return step === undefined && isPortableValue(range, names);
  return bounds.length === 2 && bounds.every((bound) => isPortableValue(bound, names));
}

/**
 * The cron string to put in a Temporal `ScheduleSpec.cronExpressions` for a
 * trigger's expression: a 5-field expression unchanged, a 6-field one
 * (leading seconds) with a year `*` appended so Temporal reads its first field
 * as seconds. Pass the trigger's timezone as `ScheduleSpec.timezone`.
 *
 * Call it at registration too: it throws {@link InvalidCronError} for any
 * expression that is invalid here or uses syntax Temporal does not share.
 */
export function toTemporalCronString(cron: string): string {
  assertValidCronSpec({ cron, timezone: 'UTC' });
  const fields = cron.trim().split(/\s+/);
  const sixFields = fields.length === 6 ? fields : ['0', ...fields];
  sixFields.forEach((field, index) => {
    const names = index === 4 ? MONTH_NAMES : index === 5 ? DAY_NAMES : [];
    if (!field.split(',').every((token) => isPortableToken(token, names))) {
      throw new InvalidCronError(
        `cron "${cron}": ${FIELD_NAMES[index] ?? 'field'} "${field}" uses syntax Temporal Schedules do not support (use numbers, names, *, ranges, steps and lists)`,
      );
    }
  });
  return fields.length === 6 ? `${fields.join(' ')} *` : fields.join(' ');
}
