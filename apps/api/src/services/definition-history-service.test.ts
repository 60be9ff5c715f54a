import { InvalidInputError } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { decodeVersionCursor, diffRange, encodeVersionCursor } from './definition-history-service';

describe('version cursors', () => {
  test('a cursor names the version a page ended at and decodes back to it', () => {
    for (const version of [1, 2, 49, 2_147_483_647])
      expect(decodeVersionCursor(encodeVersionCursor(version))).toBe(version);
  });

  test('anything the API did not issue decodes to nothing', () => {
    const forged = (text: string) => Buffer.from(text).toString('base64url');
    for (const cursor of [
      '',
      'garbage',
      forged('version:0'),
      forged('version:-1'),
      forged('version:01'),
      forged('version:1e3'),
      forged('version:2147483648'),
      forged('version:99999999999'),
      forged('v:3'),
    ]) {
      expect(decodeVersionCursor(cursor), cursor).toBeUndefined();
    }
  });
});

describe('which versions a diff compares', () => {
  test('without from and to, the current version against the one before it', () => {
    expect(diffRange({}, 4)).toEqual({ from: 3, to: 4 });
  });

  test('with only to, that version against the one before it; with only from, from against the current version', () => {
    expect(diffRange({ to: 2 }, 4)).toEqual({ from: 1, to: 2 });
    expect(diffRange({ from: 1 }, 4)).toEqual({ from: 1, to: 4 });
    expect(diffRange({ from: 4, to: 1 }, 4)).toEqual({ from: 4, to: 1 });
  });

  test('version 1 has no version before it, so leaving out from is a 400 naming querystring.from', () => {
    for (const [query, current] of [
      [{}, 1],
      [{ to: 1 }, 5],
    ] as const) {
      const error = (() => {
        try {
          diffRange(query, current);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).issues).toEqual([expect.objectContaining({ path: 'querystring.from' })]);
    }
  });
});
