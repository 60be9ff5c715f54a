import { DURATION_PATTERN } from './duration';

/**
 * JSON Schema forms of rules the API checks in code, so the OpenAPI document
 * states them where JSON Schema can: a numeric range over a string of digits
 * is a regular expression. Pure; safe in workflow code.
 */

/**
 * A schema keyword (set with zod's `.meta({ [ON_WRITE]: { … } })`) holding JSON
 * Schema keywords that hold for what a client writes but not for every stored
 * value the API returns, e.g. limits added after values were stored. The API's
 * OpenAPI document merges them into request schemas and drops them from
 * response schemas (apps/api/src/openapi-document.ts).
 */
export const ON_WRITE = 'x-on-write';

const DIGIT = '[0-9]';

/** `[lo-hi]` for two digits (as characters). */
const digits = (lo: number, hi: number): string =>
  lo === hi ? String(lo) : lo === 0 && hi === 9 ? DIGIT : `[${lo}-${hi}]`;
const anyDigits = (count: number): string => (count === 0 ? '' : count === 1 ? DIGIT : `${DIGIT}{${count}}`);

/** Every digit string of `low.length` digits from `low` to `high` (same length, low <= high), as alternatives. */
function sameLength(low: string, high: string): string[] {
  if (low === high) return [low];
  const rest = low.length - 1;
  const [a, b] = [Number(low[0]), Number(high[0])];
  if (rest === 0) return [digits(a, b)];
  if (a === b) return sameLength(low.slice(1), high.slice(1)).map((tail) => `${a}(?:${tail})`);
  const alternatives: string[] = [];
  const lowTail = low.slice(1);
  const highTail = high.slice(1);
  // The middle first digits take any tail; the first and last take theirs unless it is all of them.
  const first = /^0*$/.test(lowTail) ? a : a + 1;
  const last = /^9*$/.test(highTail) ? b : b - 1;
  if (first > a) alternatives.push(...sameLength(lowTail, '9'.repeat(rest)).map((tail) => `${a}(?:${tail})`));
  if (first <= last) alternatives.push(`${digits(first, last)}${anyDigits(rest)}`);
  if (last < b) alternatives.push(...sameLength('0'.repeat(rest), highTail).map((tail) => `${b}(?:${tail})`));
  return alternatives;
}

/**
 * The decimal integers from `min` to `max` (both whole and >= 0), written
 * without leading zeros, by their number of digits: `[digits, alternation]`.
 */
function byLength(min: number, max: number): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (let length = String(min).length; length <= String(max).length; length += 1) {
    const low = Math.max(min, length === 1 ? 0 : 10 ** (length - 1));
    const high = Math.min(max, 10 ** length - 1);
    if (low > high) continue;
    out.push([length, sameLength(String(low), String(high)).join('|')]);
  }
  return out;
}

/** A regular expression source (unanchored) for the decimal integers `min`..`max`, no sign, no leading zeros. */
export function integerRangePattern(min: number, max: number): string {
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || min > max)
    throw new Error(`not a range of whole numbers: ${min}..${max}`);
  return byLength(min, max)
    .map(([, alternatives]) => alternatives)
    .join('|');
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** DURATION_PATTERN's digit count. */
const MAX_DURATION_DIGITS = 9;
const parse = (value: string): number => {
  const match = DURATION_PATTERN.exec(value);
  if (match === null) throw new Error(`not a duration: ${value}`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
};

/**
 * An anchored regular expression source for the durations (DURATION_PATTERN:
 * 1 to 9 digits, leading zeros allowed, then ms, s, m, h or d) from `min` to
 * `max` inclusive, e.g. `durationPattern({ max: '365d' })`.
 */
export function durationPattern(bounds: { min?: string; max?: string }): string {
  const minMs = bounds.min === undefined ? 0 : parse(bounds.min);
  const maxMs = bounds.max === undefined ? Infinity : parse(bounds.max);
  const units = Object.entries(UNIT_MS).flatMap(([unit, ms]) => {
    const low = Math.ceil(minMs / ms);
    const high = Math.min(Math.floor(maxMs / ms), 10 ** MAX_DURATION_DIGITS - 1);
    if (low > high) return [];
    // Leading zeros up to the digit limit; zero itself is one to nine zeros.
    const numbers = byLength(Math.max(low, 1), high).map(
      ([length, alternatives]) =>
        `${length < MAX_DURATION_DIGITS ? `0{0,${MAX_DURATION_DIGITS - length}}` : ''}(?:${alternatives})`,
    );
    if (low === 0) numbers.push(`0{1,${MAX_DURATION_DIGITS}}`);
    return [`(?:${numbers.join('|')})${unit}`];
  });
  return `^(?:${units.join('|')})$`;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Resolves ON_WRITE keywords in a generated JSON Schema, in place and at any
 * depth: for a request schema (`write`) they are merged in — subschema lists
 * (`allOf`; an `anyOf`/`oneOf` that meets one already there, under `allOf`)
 * are combined, any other keyword replaced (e.g. a narrower pattern); for a
 * response schema they are dropped.
 */
export function resolveOnWrite(schema: unknown, write: boolean): void {
  if (Array.isArray(schema)) {
    for (const item of schema) resolveOnWrite(item, write);
    return;
  }
  if (!isObject(schema)) return;
  const onWrite = schema[ON_WRITE];
  if (onWrite !== undefined) {
    delete schema[ON_WRITE];
    if (write && isObject(onWrite)) {
      for (const [keyword, value] of Object.entries(onWrite)) {
        const allOf = (schema.allOf as unknown[] | undefined) ?? [];
        if (keyword === 'allOf' && Array.isArray(value)) schema.allOf = [...allOf, ...(value as unknown[])];
        else if (keyword in schema && (keyword === 'anyOf' || keyword === 'oneOf'))
          schema.allOf = [...allOf, { [keyword]: value }];
        else schema[keyword] = value;
      }
    }
  }
  for (const child of Object.values(schema)) resolveOnWrite(child, write);
}
