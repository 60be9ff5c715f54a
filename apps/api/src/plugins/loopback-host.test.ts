import { describe, expect, test } from 'vitest';
import { isLoopbackHost } from './loopback-host';

describe('isLoopbackHost', () => {
  test.each(['localhost', 'localhost:3000', 'LocalHost.', '127.0.0.1', '127.255.0.9:80', '[::1]', '[::1]:3000'])(
    '%s is a loopback name',
    (host) => expect(isLoopbackHost(host)).toBe(true),
  );

  test.each([
    undefined,
    '',
    'attacker.example',
    'localhost.attacker.example',
    '127.0.0.1.nip.io',
    '127.0.0.256',
    '128.0.0.1',
    '0.0.0.0',
    '[::ffff:7f00:1]',
    '[::1',
    'localhost:abc',
    'localhost:3000:1',
    '[::1]x',
  ])('%s is not', (host) => expect(isLoopbackHost(host)).toBe(false));
});
