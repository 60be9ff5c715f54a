import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { loadConfig } from './index';

const base = { DATABASE_URL: 'postgres://u:p@localhost:5432/db' };

describe('ingress configuration', () => {
  test('retention, rate limit and webhook secret keys have documented defaults', () => {
    const config = loadConfig(base);
    // No retention unless an operator chooses one: ids are remembered forever (docs/ingress.md, "How long ids are remembered").
    expect(config.events).toEqual({ retentionDays: null, payloadRetentionDays: null });
    expect(config.rateLimit).toEqual({ max: 1200, windowMs: 60_000 });
    expect(config.webhooks).toEqual({ secretKeys: [] });
  });

  test('a rate limit of 0 is allowed and means off', () => {
    expect(loadConfig({ ...base, RATE_LIMIT_MAX: '0' }).rateLimit.max).toBe(0);
  });

  test('event retention is whole days, at least one', () => {
    expect(loadConfig({ ...base, EVENT_RETENTION_DAYS: '7' }).events.retentionDays).toBe(7);
    expect(() => loadConfig({ ...base, EVENT_RETENTION_DAYS: '0' })).toThrow(/EVENT_RETENTION_DAYS/);
    expect(() => loadConfig({ ...base, EVENT_RETENTION_DAYS: '1.5' })).toThrow(/EVENT_RETENTION_DAYS/);
  });

  test('payload retention is whole days and never longer than the event retention', () => {
    expect(loadConfig({ ...base, EVENT_PAYLOAD_RETENTION_DAYS: '30' }).events.payloadRetentionDays).toBe(30);
    expect(loadConfig({ ...base, EVENT_RETENTION_DAYS: '90', EVENT_PAYLOAD_RETENTION_DAYS: '30' }).events).toEqual({
      retentionDays: 90,
      payloadRetentionDays: 30,
    });
    expect(() => loadConfig({ ...base, EVENT_PAYLOAD_RETENTION_DAYS: '0' })).toThrow(/EVENT_PAYLOAD_RETENTION_DAYS/);
    expect(() => loadConfig({ ...base, EVENT_RETENTION_DAYS: '7', EVENT_PAYLOAD_RETENTION_DAYS: '8' })).toThrow(
      /EVENT_PAYLOAD_RETENTION_DAYS: must be at most EVENT_RETENTION_DAYS/,
    );
  });

  test('ingest keys without API keys are refused, since authentication would be off', () => {
    expect(() => loadConfig({ ...base, INGEST_KEYS: 'i' })).toThrow(/INGEST_KEYS needs API_KEYS/);
  });

  test('webhook secret keys must each be 32 bytes of base64', () => {
    const good = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
    expect(loadConfig({ ...base, WEBHOOK_SECRET_KEYS: good.join(',') }).webhooks.secretKeys).toEqual(good);
    expect(() => loadConfig({ ...base, WEBHOOK_SECRET_KEYS: randomBytes(16).toString('base64') })).toThrow(
      /WEBHOOK_SECRET_KEYS/,
    );
    expect(() => loadConfig({ ...base, WEBHOOK_SECRET_KEYS: 'not base64 at all!' })).toThrow(/WEBHOOK_SECRET_KEYS/);
  });
});
