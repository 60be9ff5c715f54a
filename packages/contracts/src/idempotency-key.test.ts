import { describe, expect, test } from 'vitest';
import { parseIdempotencyKey } from './event-envelope';

describe('Idempotency-Key header values', () => {
  test('a quoted Structured Field string, as the IETF draft sends it, gives the key inside the quotes', () => {
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
  });

  test('a bare token is the key as it is', () => {
    expect(parseIdempotencyKey('key-123')).toBe('key-123');
    expect(parseIdempotencyKey('  key-123 ')).toBe('key-123');
  });

  test('escapes inside a quoted key are undone', () => {
    expect(parseIdempotencyKey('"a\\"b\\\\c"')).toBe('a"b\\c');
  });

  test('a value that only looks half quoted is taken literally', () => {
    expect(parseIdempotencyKey('"abc')).toBe('"abc');
    expect(parseIdempotencyKey('"a"b"')).toBe('"a"b"');
  });
});
