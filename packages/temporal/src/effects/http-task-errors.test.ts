import { describe, expect, test } from 'vitest';
import { networkFailureCause } from './http-task';

const systemError = (code: string, message: string): Error => Object.assign(new Error(message), { code });

describe('why an http request got no answer', () => {
  test("undici's `fetch failed` is looked through to the system error's code", () => {
    const error = new TypeError('fetch failed', {
      cause: systemError('ENOTFOUND', 'getaddrinfo ENOTFOUND nonexistent.invalid'),
    });
    expect(networkFailureCause(error)).toEqual({
      code: 'ENOTFOUND',
      message: 'getaddrinfo ENOTFOUND nonexistent.invalid',
    });
  });

  test('a connect that tried several addresses names the first address error', () => {
    const aggregate = new AggregateError([
      systemError('ECONNREFUSED', 'connect ECONNREFUSED ::1:9'),
      systemError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:9'),
    ]);
    expect(networkFailureCause(new TypeError('fetch failed', { cause: aggregate }))?.code).toBe('ECONNREFUSED');
  });

  test('a TLS failure names the certificate problem', () => {
    const error = new TypeError('fetch failed', { cause: systemError('CERT_HAS_EXPIRED', 'certificate has expired') });
    expect(networkFailureCause(error)?.code).toBe('CERT_HAS_EXPIRED');
  });

  test('an error without a code anywhere in its chain has no cause to name', () => {
    expect(
      networkFailureCause(new TypeError('fetch failed', { cause: new Error('other side closed') })),
    ).toBeUndefined();
    expect(networkFailureCause('not an error')).toBeUndefined();
  });
});
