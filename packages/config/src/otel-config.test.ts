import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from './index';

const base = { DATABASE_URL: 'postgres://x/y' };

function issues(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
  return [];
}

describe('the OpenTelemetry trace settings', () => {
  test('without any OTEL_* setting traces are off', () => {
    expect(loadConfig(base).tracing).toBeNull();
  });

  test('OTEL_EXPORTER_OTLP_ENDPOINT turns traces on, sent to its /v1/traces', () => {
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      endpoint: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: null,
    });
  });

  test('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is, before the general endpoint', () => {
    const config = loadConfig({
      ...base,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b.example/otlp/traces',
    });
    expect(config.tracing?.endpoint).toBe('https://b.example/otlp/traces');
  });

  test('OTEL_TRACES_EXPORTER=otlp alone sends to the local collector; none turns traces off even with an endpoint', () => {
    expect(loadConfig({ ...base, OTEL_TRACES_EXPORTER: 'otlp' }).tracing?.endpoint).toBe(
      'http://localhost:4318/v1/traces',
    );
    expect(
      loadConfig({ ...base, OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318' }).tracing,
    ).toBeNull();
  });

  test('the service name and collector headers are read; a header without = is refused naming the setting', () => {
    const config = loadConfig({
      ...base,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_SERVICE_NAME: 'core-eu',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%3D1, tenant=t1',
    });
    expect(config.tracing).toMatchObject({ serviceName: 'core-eu', headers: { 'x-api-key': 'abc=1', tenant: 't1' } });
    expect(issues({ OTEL_EXPORTER_OTLP_HEADERS: 'novalue' })).toEqual([
      expect.stringContaining('OTEL_EXPORTER_OTLP_HEADERS'),
    ]);
    expect(issues({ OTEL_TRACES_EXPORTER: 'zipkin' })).toEqual([expect.stringContaining('OTEL_TRACES_EXPORTER')]);
  });
});

describe('the log format', () => {
  test('is JSON unless LOG_FORMAT=pretty', () => {
    expect(loadConfig(base).logFormat).toBe('json');
    expect(loadConfig({ ...base, LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(issues({ LOG_FORMAT: 'xml' })).toEqual([expect.stringContaining('LOG_FORMAT')]);
  });
});
