import { describe, expect, test } from 'vitest';
import { redactText, redactValue, SecretMissingError, secretScope } from './task-secrets';

const used = new Map([
  ['VENDOR_TOKEN', 'sk_live_abc123'],
  ['PATH_TOKEN', 'pt-9f8e'],
]);

describe('redacting secret values', () => {
  test('a secret in a URL is replaced by its name', () => {
    expect(redactText('https://api.test/v1/pt-9f8e/orders?key=sk_live_abc123', used)).toBe(
      'https://api.test/v1/[secret:PATH_TOKEN]/orders?key=[secret:VENDOR_TOKEN]',
    );
  });

  test('every occurrence is replaced, not only the first', () => {
    expect(redactText('pt-9f8e and pt-9f8e again', used)).toBe('[secret:PATH_TOKEN] and [secret:PATH_TOKEN] again');
  });

  test('a percent-encoded secret, as a server quoting the URL would show it, is replaced too', () => {
    const secrets = new Map([['PATH_TOKEN', 'a/b c']]);
    expect(redactText('no route /v1/a%2Fb%20c/x', secrets)).toBe('no route /v1/[secret:PATH_TOKEN]/x');
  });

  test('a secret that contains another is replaced whole, named after the longer one', () => {
    const secrets = new Map([
      ['SHORT', 'tok_1'],
      ['LONG', 'tok_12345'],
    ]);
    expect(redactText('a=tok_12345 b=tok_1 c=tok_1x', secrets)).toBe('a=[secret:LONG] b=[secret:SHORT] c=[secret:SHORT]x');
  });

  test('the order secrets are given in does not change the result', () => {
    const forward = new Map([
      ['SHORT', 'tok_1'],
      ['LONG', 'tok_12345'],
    ]);
    const backward = new Map([...forward].reverse());
    expect(redactText('tok_12345', backward)).toBe(redactText('tok_12345', forward));
  });

  test('overlapping occurrences of two secrets leave no piece of either behind', () => {
    const secrets = new Map([
      ['A', 'abcd'],
      ['B', 'cdef'],
    ]);
    expect(redactText('xabcdefx', secrets)).toBe('x[secret:A+B]x');
  });

  test('a response body is redacted in strings, keys and numbers, and keeps its shape', () => {
    const secrets = new Map([
      ['VENDOR_TOKEN', 'sk_live_abc123'],
      ['PIN', '4242'],
    ]);
    const body = { echo: { authorization: 'Bearer sk_live_abc123' }, sk_live_abc123: true, list: ['x', 'sk_live_abc123'], pin: 14242, n: 7, none: null };
    expect(redactValue(body, secrets)).toEqual({
      echo: { authorization: 'Bearer [secret:VENDOR_TOKEN]' },
      '[secret:VENDOR_TOKEN]': true,
      list: ['x', '[secret:VENDOR_TOKEN]'],
      pin: '1[secret:PIN]',
      n: 7,
      none: null,
    });
  });

  test('text without secrets, or with no secrets used, is returned unchanged', () => {
    expect(redactText('nothing to see', used)).toBe('nothing to see');
    const body = { a: 'sk_live_abc123' };
    expect(redactValue(body, new Map())).toBe(body);
  });
});

describe('secret lookups for one task', () => {
  test('a known secret is returned and recorded as used', () => {
    const scope = secretScope(used);
    expect(scope.lookup('VENDOR_TOKEN')).toBe('sk_live_abc123');
    expect([...scope.used.keys()]).toEqual(['VENDOR_TOKEN']);
  });

  test('a missing secret throws an error naming the secret and its variable, never a value', () => {
    const scope = secretScope(used);
    expect(() => scope.lookup('MISSING')).toThrow(SecretMissingError);
    expect(() => scope.lookup('MISSING')).toThrow(/secrets\.MISSING.*TASK_SECRET_MISSING/);
    expect(scope.used.size).toBe(0);
  });
});
