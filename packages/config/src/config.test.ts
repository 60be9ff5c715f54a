import { describe, expect, test } from 'vitest';
import { inspect } from 'node:util';
import { ConfigError, loadConfig } from './index';

describe('configuration', () => {
  test('only DATABASE_URL is required and everything else has a documented default', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u:p@localhost:5432/db' });
    expect(config).toMatchObject({
      temporal: {
        address: '127.0.0.1:7233',
        namespace: 'default',
        taskQueue: 'activity-core',
        uiUrl: 'http://127.0.0.1:8233',
      },
      http: { host: '127.0.0.1', port: 3000, bodyLimitBytes: 1024 * 1024 },
      auth: { apiKeys: [], ingestKeys: [], enabled: false },
      logLevel: 'info',
      migrateOnStart: true,
    });
  });

  test('comma-separated keys are split and trimmed, and keys turn authentication on', () => {
    const [a, b, i] = ['a'.repeat(32), 'b'.repeat(32), 'i'.repeat(32)];
    const config = loadConfig({ DATABASE_URL: 'postgres://x/y', API_KEYS: ` ${a} , ${b},,`, INGEST_KEYS: i });
    expect(config.auth).toEqual({ apiKeys: [a, b], ingestKeys: [i], enabled: true, apiKeyRoles: {} });
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

  test('prepared statements are on unless DATABASE_PREPARED_STATEMENTS turns them off, and any other value is refused by name', () => {
    const base = { DATABASE_URL: 'postgres://x/y' };
    expect(loadConfig(base).databasePreparedStatements).toBe(true);
    expect(loadConfig({ ...base, DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false);
    expect(loadConfig({ ...base, DATABASE_PREPARED_STATEMENTS: '0' }).databasePreparedStatements).toBe(false);
    expect(() => loadConfig({ ...base, DATABASE_PREPARED_STATEMENTS: 'off' })).toThrow(/DATABASE_PREPARED_STATEMENTS/);
    expect(() => loadConfig({ ...base, DATABASE_PREPARED_STATEMENTS: 'x'.repeat(100_000) })).toThrow(
      /DATABASE_PREPARED_STATEMENTS/,
    );
  });
});

describe('task secrets', () => {
  const base = { DATABASE_URL: 'postgres://x/y' };

  function configError(env: Record<string, string>): string {
    try {
      loadConfig({ ...base, ...env });
    } catch (error) {
      if (error instanceof ConfigError) return error.message;
      throw error;
    }
    throw new Error('expected a configuration error');
  }

  test('TASK_SECRET_<NAME> variables become the secrets http tasks reference as secrets.NAME', () => {
    const config = loadConfig({
      ...base,
      TASK_SECRET_VENDOR_TOKEN: 'sk_live_1',
      TASK_SECRET_PATH_TOKEN: 'p-2',
      OTHER: 'x',
    });
    expect(config.taskSecrets.get('VENDOR_TOKEN')).toBe('sk_live_1');
    expect(config.taskSecrets.get('PATH_TOKEN')).toBe('p-2');
    expect(config.taskSecrets.names).toEqual(['PATH_TOKEN', 'VENDOR_TOKEN']);
    expect(config.taskSecrets.get('OTHER')).toBeUndefined();
  });

  test('without TASK_SECRET_ variables there are no secrets', () => {
    expect(loadConfig(base).taskSecrets.names).toEqual([]);
  });

  test('an empty secret is a configuration error naming the variable', () => {
    expect(configError({ TASK_SECRET_VENDOR_TOKEN: '' })).toMatch(/TASK_SECRET_VENDOR_TOKEN: must not be empty/);
  });

  test('a secret name that templates could not reference is a configuration error naming the variable', () => {
    expect(configError({ TASK_SECRET_vendor_token: 'x' })).toContain('TASK_SECRET_vendor_token');
    expect(configError({ TASK_SECRET_: 'x' })).toContain('TASK_SECRET_:');
    expect(configError({ TASK_SECRET_1ST: 'x' })).toContain('TASK_SECRET_1ST');
  });

  test('logging or serialising the config shows secret names, never values', () => {
    const config = loadConfig({ ...base, TASK_SECRET_VENDOR_TOKEN: 'sk_live_do_not_print' });
    expect(JSON.stringify(config)).not.toContain('sk_live_do_not_print');
    expect(JSON.stringify(config)).toContain('VENDOR_TOKEN');
    expect(inspect(config, { depth: Infinity, showHidden: true })).not.toContain('sk_live_do_not_print');
  });

  test('the error for a bad secret never quotes its value', () => {
    expect(configError({ TASK_SECRET_bad: 'sk_live_do_not_print' })).not.toContain('sk_live_do_not_print');
  });
});

describe('http task egress allowlist', () => {
  test('HTTP_TASK_EGRESS_ALLOW is empty by default, so http tasks reach public addresses only', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://x/y' }).httpTasks).toEqual({ egressAllow: [] });
  });

  test('CIDRs, addresses, hostnames and *.suffixes are accepted, comma-separated', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://x/y',
      HTTP_TASK_EGRESS_ALLOW: ' 10.20.0.0/16, fd00::/8,127.0.0.1 , erp.internal,*.corp.example',
    });
    expect(config.httpTasks.egressAllow).toEqual([
      '10.20.0.0/16',
      'fd00::/8',
      '127.0.0.1',
      'erp.internal',
      '*.corp.example',
    ]);
  });

  test('a malformed entry is a configuration error naming the variable', () => {
    for (const bad of ['10.0.0.0/33', 'http://erp.internal', 'erp.internal/8', 'a b']) {
      expect(() => loadConfig({ DATABASE_URL: 'postgres://x/y', HTTP_TASK_EGRESS_ALLOW: bad }), bad).toThrow(
        /HTTP_TASK_EGRESS_ALLOW/,
      );
    }
  });
});

describe('input limits and slow-client timeouts', () => {
  test('have documented defaults: 256 KiB and 32 levels of event data, no seconds-level cron, 30 s / 10 s / 72 s timeouts', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://x/y' });
    expect(config.eventData).toEqual({ maxBytes: 256 * 1024, maxDepth: 32 });
    expect(config.cron).toEqual({ allowSeconds: false });
    expect(config.http).toMatchObject({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 72_000,
    });
  });

  test('a headers timeout longer than the request timeout is refused by name', () => {
    expect(() =>
      loadConfig({ DATABASE_URL: 'postgres://x/y', HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '2000' }),
    ).toThrow(/HTTP_HEADERS_TIMEOUT_MS/);
  });
});
