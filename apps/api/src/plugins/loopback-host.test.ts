import { describe, expect, test } from 'vitest';
import { isLoopbackHost } from './loopback-host';

describe('isLoopbackHost', () => {
  test.each([
    'localhost',
    'localhost:3000',
    'LOCALHOST:3000',
    'api.localhost:3000',
    'localhost.',
    '127.0.0.1',
    '127.0.0.1:3000',
    '127.255.0.9:80',
    '[::1]',
    '[::1]:3000',
  ])('%s is a loopback name', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  test.each([
    undefined,
    '',
    'attacker.example',
    'attacker.example:3000',
    'localhost.attacker.example',
    '127.0.0.1.attacker.example',
    '127.0.0.256',
    '127.1',
    '0.0.0.0:3000',
    '10.0.0.1',
    '[::ffff:127.0.0.1]:3000',
    '[::1',
    '[::1]x',
    'localhost:3000:80',
    'localhost:abc',
    'user@localhost',
  ])('%s is not', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});
