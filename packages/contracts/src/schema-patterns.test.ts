import { describe, expect, test } from 'vitest';
import { tryParseDurationMs } from './duration';
import { durationPattern, integerRangePattern } from './schema-patterns';

const anchored = (source: string): RegExp => new RegExp(`^(?:${source})$`);

/** A small deterministic generator, so a failure names values that reproduce. */
function* numbers(seed: number, count: number, max: number): Generator<number> {
  let state = seed;
  for (let i = 0; i < count; i += 1) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    yield Math.floor((state / 2_147_483_648) * max);
  }
}

describe('integerRangePattern', () => {
  test('matches exactly the whole numbers of the range, for every range within 0..300', () => {
    for (let min = 0; min <= 300; min += 7) {
      for (let max = min; max <= 300; max += 11) {
        const pattern = anchored(integerRangePattern(min, max));
        for (let value = 0; value <= 400; value += 1) expect(pattern.test(String(value)), `${value} in ${min}..${max}`).toBe(value >= min && value <= max);
      }
    }
  });

  test('matches the version numbers 1 to 2147483647 and nothing beyond, nor leading zeros, signs or exponents', () => {
    const pattern = anchored(integerRangePattern(1, 2_147_483_647));
    for (const value of ['1', '9', '10', '2147483647', '2147483640', '2147483599', '1999999999', '999999999']) expect(pattern.test(value), value).toBe(true);
    for (const value of ['0', '2147483648', '2147483650', '2200000000', '9999999999', '01', '+1', '-1', '1e3', '']) expect(pattern.test(value), value).toBe(false);
    for (const value of numbers(7, 2_000, 4_000_000_000)) expect(pattern.test(String(value)), String(value)).toBe(value >= 1 && value <= 2_147_483_647);
  });

  test('refuses a range that is not one of whole numbers', () => {
    expect(() => integerRangePattern(5, 4)).toThrow();
    expect(() => integerRangePattern(-1, 4)).toThrow();
  });
});

describe('durationPattern', () => {
  const samples = (): string[] => {
    const out: string[] = ['0ms', '000000000d', '1s', '999ms', '1000ms', '365d', '366d', '8760h', '8761h', '525600m', '525601m', '31536000s', '31536001s', '31536000000ms', '0000000001d', '15m', '16m', '900s', '901s', '5m', '300000ms', '300001ms'];
    for (const value of numbers(3, 3_000, 999_999_999)) for (const unit of ['ms', 's', 'm', 'h', 'd']) out.push(`${String(value % 10 ** (1 + (value % 9)))}${unit}`);
    for (const value of numbers(11, 500, 999)) out.push(`${String(value).padStart(1 + (value % 9), '0')}d`);
    return out;
  };

  test.each([
    [{ max: '365d' }],
    [{ max: '15m' }],
    [{ min: '1s' }],
    [{ min: '1s', max: '5m' }],
  ])('matches exactly the durations the range check accepts (%o)', (bounds) => {
    const pattern = new RegExp(durationPattern(bounds));
    const min = bounds.min === undefined ? 0 : tryParseDurationMs(bounds.min)!;
    const max = bounds.max === undefined ? Infinity : tryParseDurationMs(bounds.max)!;
    for (const value of samples()) {
      const ms = tryParseDurationMs(value);
      expect(pattern.test(value), value).toBe(ms !== undefined && ms >= min && ms <= max);
    }
  });

  test('never matches what is not a duration', () => {
    const pattern = new RegExp(durationPattern({ max: '365d' }));
    for (const value of ['', '1', 'ms', '1 s', '1.5s', '-1s', '1S', '1sec', '0000000000s', '1s\n', '١s']) expect(pattern.test(value), value).toBe(false);
  });
});
