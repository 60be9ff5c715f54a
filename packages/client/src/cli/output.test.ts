import { describe, expect, test } from 'vitest';
import { forTerminal, terminalSafe, terminalSafeJson, terminalSafeYaml } from './output';

describe('terminal-safe output', () => {
  test('control, DEL, C1 and bidirectional characters are shown as escapes; other text is unchanged', () => {
    expect(terminalSafe('a\u001b]0;title\u0007b\rc\u007f\u009b2J\u202e\u2066ü€')).toBe(
      'a\\x1b]0;title\\x07b\\x0dc\\x7f\\x9b2J\\u202e\\u2066ü€',
    );
  });

  test('forTerminal escapes every string and key of an answer and keeps numbers, booleans and null', () => {
    expect(forTerminal({ 'k\u001b': ['v\u009b', 1, true, null], n: { s: '\u202e' } })).toEqual({
      'k\\x1b': ['v\\x9b', 1, true, null],
      n: { s: '\\u202e' },
    });
  });

  test('JSON and YAML output carry C1 and bidirectional characters as \\u escapes; JSON still parses to the same value', () => {
    const value = { source: 'x\u009by\u202ez\u001b' };
    const text = terminalSafeJson(value);
    expect(text).not.toMatch(/[\u009b\u202e]/);
    expect(text).not.toContain('\u001b');
    expect(JSON.parse(text)).toEqual(value);
    expect(terminalSafeYaml('a: "p\u009bq"\n')).toBe('a: "p\\u009bq"\n');
  });
});
