import { describe, expect, test } from 'vitest';
import { findSecretPlaceholders, MAX_SECRET_ISSUES, secretPlaceholderIssues } from './task-secrets';

/** The regular expression the scanner replaces: same matches, but quadratic on `{{secrets` repeated. */
const REFERENCE = /\{\{\s*secrets(?![A-Za-z0-9_])([^}]*)\}\}/g;
const reference = (text: string): string[] => [...text.matchAll(REFERENCE)].map((match) => match[0]);

describe('secret placeholder scanning', () => {
  test('finds exactly what the reference regular expression finds, on hand-picked texts', () => {
    const texts = [
      '',
      'Bearer {{ secrets.VENDOR_TOKEN }}',
      '{{secrets.A}}{{secrets.B}}',
      '{{{secrets.A}}',
      '{{ secrets}} and {{secrets }}',
      '{{secretsX.A}} {{secrets_A}} {{secrets9}}',
      '{{ secrets.A } }} {{ secrets.B }}',
      '{{ secrets.A }x}}{{secrets.C}}',
      '{{\n\tsecrets.A\n}}',
      '{{ secrets.a.b {{ secrets.C }}',
      '{{ secrets',
      '{{secrets{{secrets}}',
      '}} {{ secrets.A }}}}',
      '{{\u00a0secrets.A}}',
    ];
    for (const text of texts)
      expect(
        findSecretPlaceholders(text).map((found) => found.placeholder),
        text,
      ).toEqual(reference(text));
  });

  test('finds exactly what the reference regular expression finds, on generated texts', () => {
    const alphabet = ['{', '}', ' ', 'secrets', '.', 'A', 'a', '_', '\n', 'x'];
    let seed = 42;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let round = 0; round < 3_000; round++) {
      const length = next() % 30;
      let text = '';
      for (let i = 0; i < length; i++) text += alphabet[next() % alphabet.length];
      expect(
        findSecretPlaceholders(text).map((found) => found.placeholder),
        JSON.stringify(text),
      ).toEqual(reference(text));
    }
  });

  test('names valid references only', () => {
    expect(findSecretPlaceholders('{{ secrets.TOKEN }} {{ secrets.token }} {{secrets}}')).toEqual([
      { placeholder: '{{ secrets.TOKEN }}', name: 'TOKEN' },
      { placeholder: '{{ secrets.token }}' },
      { placeholder: '{{secrets}}' },
    ]);
  });

  test('a value nested far deeper than any definition allows does not overflow the stack', () => {
    let value: unknown = '{{ secrets.bad }}';
    for (let i = 0; i < 100_000; i++) value = [value];
    expect(secretPlaceholderIssues(value)).toHaveLength(1);
  });

  test('issues are capped, so a body full of bad placeholders gives a short answer', () => {
    const issues = secretPlaceholderIssues({ body: '{{secrets}}'.repeat(10_000) });
    expect(issues).toHaveLength(MAX_SECRET_ISSUES);
  });

  test('placeholders in keys and values are reported with their paths, in document order', () => {
    expect(secretPlaceholderIssues({ a: ['{{ secrets.x }}'], '{{ secrets.K }}': 'v' })).toEqual([
      { path: ['a', 0], message: expect.stringContaining('{{ secrets.x }} is not a valid secret reference') },
      { path: ['{{ secrets.K }}'], message: expect.stringContaining('keys are not templated') },
    ]);
  });
});
