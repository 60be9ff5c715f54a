import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { loadConfig } from './index';

const base = { DATABASE_URL: 'postgres://x/y' };
const longKey = 'k'.repeat(32);

describe('key length', () => {
  test('an API key shorter than 32 characters is refused at start-up, naming API_KEYS', () => {
    expect(() => loadConfig({ ...base, API_KEYS: `${longKey},short-key` })).toThrow(
      /API_KEYS\.1: entry 2 of API_KEYS is 9 characters; keys must be at least 32/,
    );
  });

  test('an ingest key shorter than 32 characters is refused at start-up, naming INGEST_KEYS', () => {
    expect(() => loadConfig({ ...base, API_KEYS: longKey, INGEST_KEYS: 'i'.repeat(31) })).toThrow(
      /INGEST_KEYS\.0: .*at least 32/,
    );
  });

  test('a key given as its sha256 digest is exempt, and 32 characters is enough', () => {
    const digest = `sha256:${createHash('sha256').update('short').digest('hex')}`;
    expect(loadConfig({ ...base, API_KEYS: `${digest},${longKey}` }).auth.apiKeys).toEqual([digest, longKey]);
  });
});

describe('abuse limits and proxies', () => {
  test('by default no proxy is trusted and 30 failures per address per window are allowed', () => {
    const config = loadConfig(base);
    expect(config.trustProxy).toBe(false);
    expect(config.authFailureLimit).toEqual({ max: 30, windowMs: 60_000 });
  });

  test.each([
    ['true', true],
    ['false', false],
    ['2', 2],
    ['10.0.0.0/8, 192.168.1.5 ,fd00::/8', ['10.0.0.0/8', '192.168.1.5', 'fd00::/8']],
  ])('TRUST_PROXY=%s is %j', (value, expected) => {
    expect(loadConfig({ ...base, TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  test.each(['yes-please', '10.0.0.0/33', 'proxy.internal'])('TRUST_PROXY=%s is refused by name', (value) => {
    expect(() => loadConfig({ ...base, TRUST_PROXY: value })).toThrow(
      /TRUST_PROXY: must be true, false, a hop count, or comma-separated IP addresses\/CIDRs/,
    );
  });
});
