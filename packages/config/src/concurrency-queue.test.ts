import { describe, expect, test } from 'vitest';
import { loadConfig } from './index';

const base = { DATABASE_URL: 'postgres://x/y' };

describe('CONCURRENCY_QUEUE_MAX_BYTES', () => {
  test('is unset by default (the coordinator applies its own 1 MiB), and takes 1 to 1 MiB', () => {
    expect(loadConfig(base).concurrency).toEqual({ queueMaxBytes: undefined });
    expect(loadConfig({ ...base, CONCURRENCY_QUEUE_MAX_BYTES: '120' }).concurrency.queueMaxBytes).toBe(120);
    expect(loadConfig({ ...base, CONCURRENCY_QUEUE_MAX_BYTES: '1048576' }).concurrency.queueMaxBytes).toBe(1048576);
    for (const refused of ['0', '1048577', '1.5', 'lots'])
      expect(() => loadConfig({ ...base, CONCURRENCY_QUEUE_MAX_BYTES: refused }), refused).toThrow(
        /CONCURRENCY_QUEUE_MAX_BYTES/,
      );
  });
});
