import { describe, expect, test } from 'vitest';
import { tryParseDurationMs } from './duration';
import { durationPattern, integerRangePattern, ON_WRITE, resolveOnWrite } from './schema-patterns';

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
  test('matches exactly the whole numbers of the range, for ranges within 0..1200', () => {
    const wrong: string[] = [];
    for (let min = 0; min <= 1_200; min += 37) {
      for (let max = min; max <= 1_200; max += 53) {
        const pattern = anchored(integerRangePattern(min, max));
        for (let value = 0; value <= 1_300; value += 1)
          if (pattern.test(String(value)) !== (value >= min && value <= max)) wrong.push(`${value} in ${min}..${max}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test('matches the version numbers 1 to 2147483647 and nothing beyond, nor leading zeros, signs or exponents', () => {
    const pattern = anchored(integerRangePattern(1, 2_147_483_647));
    for (const value of ['1', '9', '10', '2147483647', '2147483640', '2147483599', '1999999999', '999999999'])
      expect(pattern.test(value), value).toBe(true);
    for (const value of ['0', '2147483648', '2147483650', '2200000000', '9999999999', '01', '+1', '-1', '1e3', ''])
      expect(pattern.test(value), value).toBe(false);
    const wrong = [...numbers(7, 5_000, 4_000_000_000)].filter(
      (value) => pattern.test(String(value)) !== (value >= 1 && value <= 2_147_483_647),
    );
    expect(wrong).toEqual([]);
  });

  test('refuses a range that is not one of whole numbers', () => {
    expect(() => integerRangePattern(5, 4)).toThrow();
    expect(() => integerRangePattern(-1, 4)).toThrow();
  });
});

describe('durationPattern', () => {
  const samples = (): string[] => {
    const out: string[] = [
      '0ms',
      '000000000d',
      '1s',
      '999ms',
      '1000ms',
      '365d',
      '366d',
      '8760h',
      '8761h',
      '525600m',
      '525601m',
      '31536000s',
      '31536001s',
      '31536000000ms',
      '0000000001d',
      '15m',
      '16m',
      '900s',
      '901s',
      '5m',
      '300000ms',
      '300001ms',
    ];
    for (const value of numbers(3, 3_000, 999_999_999))
      for (const unit of ['ms', 's', 'm', 'h', 'd']) out.push(`${String(value % 10 ** (1 + (value % 9)))}${unit}`);
    for (const value of numbers(11, 500, 999)) out.push(`${String(value).padStart(1 + (value % 9), '0')}d`);
    return out;
  };

  test.each<[{ min?: string; max?: string }]>([
    [{ max: '365d' }],
    [{ max: '15m' }],
    [{ min: '1s' }],
    [{ min: '1s', max: '5m' }],
  ])('matches exactly the durations the range check accepts (%o)', (bounds) => {
    const pattern = new RegExp(durationPattern(bounds));
    const min = bounds.min === undefined ? 0 : tryParseDurationMs(bounds.min)!;
    const max = bounds.max === undefined ? Infinity : tryParseDurationMs(bounds.max)!;
    const wrong = samples().filter((value) => {
      const ms = tryParseDurationMs(value);
      return pattern.test(value) !== (ms !== undefined && ms >= min && ms <= max);
    });
    expect(wrong).toEqual([]);
  });

  test('never matches what is not a duration', () => {
    const pattern = new RegExp(durationPattern({ max: '365d' }));
    for (const value of ['', '1', 'ms', '1 s', '1.5s', '-1s', '1S', '1sec', '0000000000s', '1s\n', '١s'])
      expect(pattern.test(value), value).toBe(false);
  });
});

describe('resolveOnWrite', () => {
  const generated = () => ({
    type: 'object',
    properties: { timeout: { type: 'string', pattern: '^any$', [ON_WRITE]: { pattern: '^bounded$' } } },
    anyOf: [{ required: ['a'] }],
    [ON_WRITE]: { anyOf: [{ required: ['b'] }], allOf: [{ required: ['c'] }] },
  });

  test('merges write-only keywords into a request schema, keeping both of two anyOf lists', () => {
    const schema = generated();
    resolveOnWrite(schema, true);
    expect(schema).toEqual({
      type: 'object',
      properties: { timeout: { type: 'string', pattern: '^bounded$' } },
      anyOf: [{ required: ['a'] }],
      allOf: [{ anyOf: [{ required: ['b'] }] }, { required: ['c'] }],
    });
  });

  test('drops them from a response schema', () => {
    const schema = generated();
    resolveOnWrite(schema, false);
    expect(schema).toEqual({
      type: 'object',
      properties: { timeout: { type: 'string', pattern: '^any$' } },
      anyOf: [{ required: ['a'] }],
    });
  });
});
