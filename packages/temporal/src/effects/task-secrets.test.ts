import { describe, expect, test } from 'vitest';
import { redactCutText, redactText, redactValue, SecretMissingError, secretScope } from './task-secrets';

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

  test('a form-encoded secret, with + for spaces as URLSearchParams writes it, is replaced too', () => {
    const secrets = new Map([['PASSPHRASE', 'open sesame/&=!']]);
    const echoed = `grant_type=password&password=${new URLSearchParams({ p: 'open sesame/&=!' }).toString().slice(2)}&x=1`;
    expect(echoed).toContain('open+sesame');
    expect(redactText(echoed, secrets)).toBe('grant_type=password&password=[secret:PASSPHRASE]&x=1');
  });

  test('a secret percent-encoded with lower-case hex digits is replaced too', () => {
    const secrets = new Map([['PATH_TOKEN', 'a/b c']]);
    expect(redactText('no route /v1/a%2fb%20c/x', secrets)).toBe('no route /v1/[secret:PATH_TOKEN]/x');
  });

  test('a JSON-escaped secret, as a text body quoting a JSON request shows it, is replaced too', () => {
    const secrets = new Map([['SIGNING_KEY', 'k"e\\y\n1']]);
    const echoed = `received ${JSON.stringify({ key: 'k"e\\y\n1' })}`;
    expect(echoed).toContain('k\\"e');
    expect(redactText(echoed, secrets)).toBe('received {"key":"[secret:SIGNING_KEY]"}');
  });

  test('a secret that contains another is replaced whole, named after the longer one', () => {
    const secrets = new Map([
      ['SHORT', 'tok_1'],
      ['LONG', 'tok_12345'],
    ]);
    expect(redactText('a=tok_12345 b=tok_1 c=tok_1x', secrets)).toBe(
      'a=[secret:LONG] b=[secret:SHORT] c=[secret:SHORT]x',
    );
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
    const body = {
      echo: { authorization: 'Bearer sk_live_abc123' },
      sk_live_abc123: true,
      list: ['x', 'sk_live_abc123'],
      pin: 14242,
      n: 7,
      none: null,
    };
    expect(redactValue(body, secrets)).toEqual({
      echo: { authorization: 'Bearer [secret:VENDOR_TOKEN]' },
      '[secret:VENDOR_TOKEN]': true,
      list: ['x', '[secret:VENDOR_TOKEN]'],
      pin: '1[secret:PIN]',
      n: 7,
      none: null,
    });
  });

  test('a body nested far deeper than the call stack allows is redacted without overflowing it', () => {
    const secrets = new Map([['VENDOR_TOKEN', 'sk_live_abc123']]);
    let body: unknown = ['sk_live_abc123'];
    for (let i = 0; i < 100_000; i++) body = { k: body };
    let redacted = redactValue(body, secrets) as { k: unknown } | string[];
    let depth = 0;
    while (!Array.isArray(redacted)) {
      redacted = redacted.k as { k: unknown } | string[];
      depth++;
    }
    expect(depth).toBe(100_000);
    expect(redacted).toEqual(['[secret:VENDOR_TOKEN]']);
  });

  test('a "__proto__" key in a body stays an own key of the redacted copy', () => {
    const body = JSON.parse('{"__proto__":{"x":"sk_live_abc123"}}') as unknown;
    const redacted = redactValue(body, used) as Record<string, unknown>;
    expect(Object.keys(redacted)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(redacted, '__proto__')?.value).toEqual({ x: '[secret:VENDOR_TOKEN]' });
  });

  test.each([
    ['as sent', 'sk_live_ab'],
    ['JSON-escaped', 'tok/\\"'],
    ['percent-encoded', 'tok%2F%2'],
    ['lower-case percent-encoded', 'tok%2f%2'],
  ])('a text cut inside a secret (%s) keeps no prefix of it', (_form, tail) => {
    const secrets = new Map([
      ['VENDOR_TOKEN', 'sk_live_abc123'],
      ['SLASHED', 'tok/"x'],
    ]);
    expect(redactCutText(`echo sk_live_abc123 and ${tail}`, secrets)).toBe('echo [secret:VENDOR_TOKEN] and ');
  });

  test('a cut text that ends in a whole secret, or in no piece of one, keeps all it has', () => {
    expect(redactCutText('echo sk_live_abc123', used)).toBe('echo [secret:VENDOR_TOKEN]');
    expect(redactCutText('nothing to see', used)).toBe('nothing to see');
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
