import { describe, expect, test } from 'vitest';
import { InvalidInputError, PayloadTooLargeError } from './errors';
import {
  assertEventDataWithinBounds,
  eventDataBoundsIssue,
  jsonDepthExceeds,
  nulCharacterPath,
  utf8Length,
} from './json-bounds';

const nested = (depth: number): unknown => {
  let value: unknown = {};
  for (let i = 1; i < depth; i++) value = { k: value };
  return value;
};

describe('event data bounds', () => {
  test('depth counts containers: data itself is level 1', () => {
    expect(jsonDepthExceeds({}, 1)).toBe(false);
    expect(jsonDepthExceeds({ a: [] }, 1)).toBe(true);
    expect(jsonDepthExceeds({ a: [1, 'x', null] }, 2)).toBe(false);
    expect(jsonDepthExceeds(nested(32), 32)).toBe(false);
    expect(jsonDepthExceeds(nested(33), 32)).toBe(true);
  });

  test('depth is measured without recursion, however deep the value', () => {
    expect(jsonDepthExceeds(nested(500_000), 32)).toBe(true);
  });

  test('size is the UTF-8 length of the JSON', () => {
    expect(utf8Length('a\u00e9\u20ac\u{1f600}')).toBe(1 + 2 + 3 + 4);
    expect(utf8Length(JSON.stringify({ s: '\u20ac' }))).toBe(Buffer.byteLength(JSON.stringify({ s: '\u20ac' })));
    const limits = { maxBytes: 20, maxDepth: 32 };
    expect(eventDataBoundsIssue({ s: 'x'.repeat(12) }, limits)).toBeUndefined(); // {"s":"xxxxxxxxxxxx"} is 20 bytes
    expect(eventDataBoundsIssue({ s: 'x'.repeat(13) }, limits)).toMatchObject({
      kind: 'too_large',
      path: 'data',
      message: expect.stringContaining('the limit is 20 bytes'),
    });
  });

  test('too deep is a 400-kind error and too large a 413-kind error, both naming data and the limit', () => {
    const limits = { maxBytes: 1024, maxDepth: 4 };
    expect(() => assertEventDataWithinBounds(nested(4), limits)).not.toThrow();
    let deep: unknown;
    try {
      assertEventDataWithinBounds(nested(5), limits);
    } catch (error) {
      deep = error;
    }
    expect(deep).toBeInstanceOf(InvalidInputError);
    expect((deep as InvalidInputError).issues).toEqual([
      { path: 'data', message: expect.stringContaining('the limit is 4 (EVENT_DATA_MAX_DEPTH)'), code: 'too_deep' },
    ]);
    let large: unknown;
    try {
      assertEventDataWithinBounds({ s: 'x'.repeat(2_000) }, limits);
    } catch (error) {
      large = error;
    }
    expect(large).toBeInstanceOf(PayloadTooLargeError);
    expect((large as PayloadTooLargeError).issues).toEqual([
      {
        path: 'data',
        message: expect.stringContaining('the limit is 1024 bytes (EVENT_DATA_LIMIT_BYTES)'),
        code: 'too_big',
      },
    ]);
  });
});

describe('NUL characters, which Postgres cannot store', () => {
  test('the path names the first string or key that holds U+0000', () => {
    expect(nulCharacterPath({ a: 'x', items: [{ note: 'ok' }, { note: 'a\u0000b' }] }, 'data')).toBe(
      'data.items[1].note',
    );
    expect(nulCharacterPath({ 'k\u0000': 1 }, 'data')).toBe('data');
    expect(nulCharacterPath('\u0000', 'data')).toBe('data');
    expect(nulCharacterPath({ a: ['x', 1, null, { b: true }] }, 'data')).toBeUndefined();
    const long = 'k'.repeat(10_000);
    expect(nulCharacterPath({ [long]: '\u0000' }, 'data')).toBe(`data.${'k'.repeat(64)}…`);
  });

  test('an escaped backslash before u0000 in the text is not a NUL', () => {
    const data = { path: 'C:\\u0000' };
    expect(JSON.stringify(data)).toContain('\\u0000');
    expect(eventDataBoundsIssue(data, { maxBytes: 1024, maxDepth: 32 })).toBeUndefined();
  });

  test('data holding one is a 400-kind error naming the string that holds it', () => {
    let error: unknown;
    try {
      assertEventDataWithinBounds({ order: { note: 'a\u0000b' } }, { maxBytes: 1024, maxDepth: 32 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues).toEqual([
      { path: 'data.order.note', message: expect.stringContaining('U+0000'), code: 'nul_character' },
    ]);
  });
});
