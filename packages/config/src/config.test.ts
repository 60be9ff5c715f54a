import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from './index';

describe('configuration', () => {
  test('only DATABASE_URL is required and everything else has a documented default', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u:p@localhost:5432/db' });
    expect(config).toMatchObject({
      temporal: { address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'activity-core', uiUrl: 'http://127.0.0.1:8233' },
      http: { host: '127.0.0.1', port: 3000, bodyLimitBytes: 1024 * 1024 },
      auth: { apiKeys: [], ingestKeys: [], enabled: false },
      logLevel: 'info',
      migrateOnStart: true,
    });
  });

  test('comma-separated keys are split and trimmed, and keys turn authentication on', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://x/y', API_KEYS: ' a , b,,', INGEST_KEYS: 'i' });
    expect(config.auth).toEqual({ apiKeys: ['a', 'b'], ingestKeys: ['i'], enabled: true });
  });

  test('every bad variable is reported at once, by name', () => {
    let error: unknown;
    try {
      loadConfig({ DATABASE_URL: 'mysql://nope', PORT: 'eighty', LOG_LEVEL: 'loud' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toContain('DATABASE_URL');
    expect(message).toContain('PORT');
    expect(message).toContain('LOG_LEVEL');
  });

  test('a missing DATABASE_URL is an error that names it', () => {
    expect(() => loadConfig({})).toThrow(/DATABASE_URL/);
  });
});
