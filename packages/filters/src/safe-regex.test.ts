import { RE2JS } from '@bufbuild/re2';
import { describe, expect, test } from 'vitest';
import { compileRegex, estimateRegexSize, MAX_REGEX_PATTERN_LENGTH, MAX_REGEX_PROGRAM_SIZE } from './safe-regex';

describe('estimateRegexSize', () => {
  test('the estimate is never below the size RE2 actually compiles to', () => {
    const patterns = [
      'abc',
      '^[a-z]+@example\\.com$',
      '(ab){3}',
      '(?:a|b|c){2,5}d?',
      '((a{2}){3}){4}',
      '(?i)\\w{10,}',
      '\\p{Greek}{5}[\\pL\\d]{2}',
      '\\Qa.b{9}\\E+',
      '[]a-]{7}x{3,}?',
      '(?P<year>\\d{4})-(?P<month>\\d{2})',
      '^(a+)+$',
      '.{0,200}!',
      '(a|b){0,50}',
      '(?:ab|cd){3,7}',
      'a{2,}b+c*?',
      '\\d{1,3}(\\.\\d{1,3}){3}',
      '(?s).{5}(?m)^x$',
      '[^\\x{10000}-\\x{10FFFF}]{4}',
    ];
    for (const pattern of patterns) {
      expect(estimateRegexSize(pattern), pattern).toBeGreaterThanOrEqual(
        RE2JS.compile(pattern).re2Input.prog.numInst(),
      );
    }
  });

  test('counted repetitions multiply what they repeat, nested ones multiply again', () => {
    expect(estimateRegexSize('(ab){100}')).toBeGreaterThanOrEqual(200);
    expect(estimateRegexSize('((ab){10}){10}')).toBeGreaterThanOrEqual(200);
    expect(estimateRegexSize('\\pL{1000}')).toBeGreaterThan(MAX_REGEX_PROGRAM_SIZE);
  });
});

describe('compileRegex', () => {
  test('a pattern that would expand past the limit is rejected before compiling', () => {
    const pattern = `(${'\\pL{1000}|'.repeat(150)}x)`;
    const start = performance.now();
    expect(() => compileRegex(pattern)).toThrow(/too complex/);
    // Compiling it would take RE2 tens of seconds.
    expect(performance.now() - start).toBeLessThan(100);
  });

  test(`a pattern longer than ${MAX_REGEX_PATTERN_LENGTH} characters is rejected`, () => {
    expect(() => compileRegex('('.repeat(MAX_REGEX_PATTERN_LENGTH + 1))).toThrow(/characters long/);
  });

  test('a malformed pattern is rejected with the parser message', () => {
    expect(() => compileRegex('(a')).toThrow(/^invalid regular expression: .*missing closing \)/);
  });

  test('a compiled pattern is reused', () => {
    expect(compileRegex('^reuse-[0-9]+$')).toBe(compileRegex('^reuse-[0-9]+$'));
  });
});
