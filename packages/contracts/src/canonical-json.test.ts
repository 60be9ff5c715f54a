import { describe, expect, test } from 'vitest';
import { canonicalJson } from './canonical-json';

/** The recursive definition the iterative one must agree with. */
function recursive(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => recursive(item === undefined ? null : item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${recursive(item)}`).join(',')}}`;
}

describe('canonical JSON', () => {
  test('sorts keys at every depth and agrees with the recursive definition', () => {
    const samples: unknown[] = [
      null,
      1.5,
      'text "quoted"',
      true,
      [],
      {},
      { b: 1, a: [3, { d: null, c: 'x' }], e: undefined },
      [undefined, 1, [2, [3, {}]]],
      { '\u00e9': 1, Z: 2, a: { y: [], x: {} } },
    ];
    for (const sample of samples) expect(canonicalJson(sample)).toBe(recursive(sample));
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
  });

  test('nesting of any depth is serialised without overflowing the stack', () => {
    let value: unknown = { leaf: true };
    for (let i = 0; i < 200_000; i++) value = i % 2 === 0 ? [value] : { k: value };
    const text = canonicalJson(value);
    expect(text.startsWith('{"k":[{"k":[')).toBe(true);
    expect(text.length).toBeGreaterThan(200_000);
  });
});
