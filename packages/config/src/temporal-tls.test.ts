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

describe('the Temporal connection settings', () => {
  test('without TLS settings the connection is plain text and carries no API key, as the dev server wants', () => {
    const config = loadConfig(base);
    expect(config.temporal.tls).toBeNull();
    expect(config.temporal.apiKey).toBeNull();
  });

  test('a CA, a client certificate and key given as files make an mTLS connection that names each setting', () => {
    const config = loadConfig({
      ...base,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/etc/temporal/ca.pem',
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/etc/temporal/client.pem',
      TEMPORAL_TLS_CLIENT_KEY_DATA: '-----BEGIN PRIVATE KEY-----\n...',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    expect(config.temporal.tls).toEqual({
      serverCa: { setting: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', path: '/etc/temporal/ca.pem' },
      serverName: 'temporal.internal',
      client: {
        cert: { setting: 'TEMPORAL_TLS_CLIENT_CERT_PATH', path: '/etc/temporal/client.pem' },
        key: { setting: 'TEMPORAL_TLS_CLIENT_KEY_DATA', data: '-----BEGIN PRIVATE KEY-----\n...' },
      },
    });
  });

  test('an API key turns TLS on with the system CAs, as Temporal Cloud expects', () => {
    const config = loadConfig({ ...base, TEMPORAL_API_KEY: 'cloud-key' });
    expect(config.temporal.apiKey).toBe('cloud-key');
    expect(config.temporal.tls).toEqual({ serverCa: null, serverName: null, client: null });
  });

  test('TEMPORAL_TLS=true alone turns TLS on, and TEMPORAL_TLS=false with TLS settings is refused', () => {
    expect(loadConfig({ ...base, TEMPORAL_TLS: 'true' }).temporal.tls).toEqual({
      serverCa: null,
      serverName: null,
      client: null,
    });
    expect(issues({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toEqual([
      'TEMPORAL_TLS: is false, but TEMPORAL_API_KEY need TLS',
    ]);
  });

  test('a client certificate without its key, or a setting given both as a path and as data, is refused by name', () => {
    expect(issues({ TEMPORAL_TLS_CLIENT_CERT_PATH: '/c.pem' })).toEqual([
      'TEMPORAL_TLS_CLIENT_KEY_PATH: mTLS needs the client key too (TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA)',
    ]);
    expect(issues({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/ca.pem', TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'pem' })).toEqual([
      'TEMPORAL_TLS_SERVER_CA_CERT_DATA: set TEMPORAL_TLS_SERVER_CA_CERT_PATH or TEMPORAL_TLS_SERVER_CA_CERT_DATA, not both',
    ]);
  });
});

describe('the payload encryption keys', () => {
  const key = Buffer.alloc(32, 1).toString('base64');

  test('are parsed as id and 32 bytes, the first sealing, and a logged config shows only their ids', () => {
    const config = loadConfig({
      ...base,
      PAYLOAD_ENCRYPTION_KEYS: `k2:${key},k1:${Buffer.alloc(32, 2).toString('base64')}`,
    });
    expect(config.payloadEncryption?.keys.ids).toEqual(['k2', 'k1']);
    expect(config.payloadEncryption?.keys.all[0]?.key.length).toBe(32);
    expect(JSON.stringify(config)).not.toContain(key);
    expect(config.payloadEncryption?.codecCorsOrigins).toEqual(['http://localhost:8233', 'http://127.0.0.1:8233']);
  });

  test('a key of another length, an entry without an id, an id with a path in it, or a repeated id is refused by name', () => {
    expect(issues({ PAYLOAD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(16).toString('base64')}` })).toEqual([
      'PAYLOAD_ENCRYPTION_KEYS.0: each key must be 32 bytes in base64 (openssl rand -base64 32)',
    ]);
    expect(issues({ PAYLOAD_ENCRYPTION_KEYS: key })[0]).toMatch(
      /^PAYLOAD_ENCRYPTION_KEYS\.0: each entry must be <key id>:<base64 key>/,
    );
    expect(issues({ PAYLOAD_ENCRYPTION_KEYS: `../k:${key}` })[0]).toMatch(
      /^PAYLOAD_ENCRYPTION_KEYS\.0: each entry must be/,
    );
    expect(issues({ PAYLOAD_ENCRYPTION_KEYS: `k1:${key},k1:${key}` })).toEqual([
      'PAYLOAD_ENCRYPTION_KEYS: key ids must be unique',
    ]);
  });

  test('without keys payloads stay plain and no codec endpoint is configured', () => {
    expect(loadConfig(base).payloadEncryption).toBeNull();
  });
});
