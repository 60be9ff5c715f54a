import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { keyIdOf, loadConfig } from './index';

const base = { DATABASE_URL: 'postgres://x/y', API_KEYS: 'management-key-0123456789abcdefghij' };
const INGEST = 'ingest-key-0123456789abcdefghijklmn';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 12);

describe('key ids', () => {
  test('a key id is the first 12 hex digits of the key SHA-256, for a clear or a prehashed entry alike', () => {
    expect(keyIdOf(INGEST)).toBe(idOf(INGEST));
    expect(keyIdOf(`sha256:${createHash('sha256').update(INGEST).digest('hex').toUpperCase()}`)).toBe(idOf(INGEST));
  });
});

describe('INGEST_KEY_SCOPES', () => {
  test('defaults to no scopes, EMIT_MAX_HOPS to 8 and EMIT_MAX_PER_ROOT to 500', () => {
    const config = loadConfig(base);
    expect(config.ingestKeyScopes).toEqual({});
    expect(config.emit).toEqual({ maxHops: 8, maxPerRoot: 500 });
    expect(loadConfig({ ...base, EMIT_MAX_PER_ROOT: '20' }).emit.maxPerRoot).toBe(20);
    expect(() => loadConfig({ ...base, EMIT_MAX_PER_ROOT: '0' })).toThrow(/EMIT_MAX_PER_ROOT/);
    expect(loadConfig({ ...base, EMIT_MAX_HOPS: '3' }).emit.maxHops).toBe(3);
    expect(() => loadConfig({ ...base, EMIT_MAX_HOPS: '0' })).toThrow(/EMIT_MAX_HOPS/);
  });

  test('scopes an ingest key by its id', () => {
    const scopes = { [idOf(INGEST)]: { sources: ['shop:*'], event_types: ['order.*'] } };
    const config = loadConfig({ ...base, INGEST_KEYS: INGEST, INGEST_KEY_SCOPES: JSON.stringify(scopes) });
    expect(config.ingestKeyScopes).toEqual(scopes);
  });

  test('refuses a scope for an id no ingest key has, naming the id', () => {
    const other = idOf('management-key-0123456789abcdefghij');
    expect(() =>
      loadConfig({ ...base, INGEST_KEYS: INGEST, INGEST_KEY_SCOPES: JSON.stringify({ [other]: { sources: ['x'] } }) }),
    ).toThrow(new RegExp(`INGEST_KEY_SCOPES.${other}: no INGEST_KEYS entry`));
  });

  test('refuses text that is not JSON, ids that are not key ids and unknown fields', () => {
    expect(() => loadConfig({ ...base, INGEST_KEYS: INGEST, INGEST_KEY_SCOPES: '{nope' })).toThrow(
      /INGEST_KEY_SCOPES: must be JSON/,
    );
    expect(() => loadConfig({ ...base, INGEST_KEYS: INGEST, INGEST_KEY_SCOPES: '{"my-key": {}}' })).toThrow(/key ids/);
    expect(() =>
      loadConfig({
        ...base,
        INGEST_KEYS: INGEST,
        INGEST_KEY_SCOPES: JSON.stringify({ [idOf(INGEST)]: { source: ['x'] } }),
      }),
    ).toThrow(/INGEST_KEY_SCOPES/);
  });
});

describe('API_KEY_ROLES', () => {
  const API = base.API_KEYS;

  test('defaults to no entries, so every API key is admin on every activity', () => {
    expect(loadConfig(base).auth.apiKeyRoles).toEqual({});
  });

  test('gives an API key a role and the activity-name prefixes it owns, by key id', () => {
    const roles = { [idOf(API)]: { role: 'write', activity_prefixes: ['billing.'] } };
    expect(loadConfig({ ...base, API_KEY_ROLES: JSON.stringify(roles) }).auth.apiKeyRoles).toEqual(roles);
  });

  test('refuses a role for an id no API key has, an unknown role, an empty prefix list and text that is not JSON', () => {
    expect(() =>
      loadConfig({ ...base, INGEST_KEYS: INGEST, API_KEY_ROLES: JSON.stringify({ [idOf(INGEST)]: { role: 'read' } }) }),
    ).toThrow(new RegExp(`API_KEY_ROLES.${idOf(INGEST)}: no API_KEYS entry`));
    expect(() => loadConfig({ ...base, API_KEY_ROLES: JSON.stringify({ [idOf(API)]: { role: 'owner' } }) })).toThrow(
      /API_KEY_ROLES/,
    );
    expect(() =>
      loadConfig({ ...base, API_KEY_ROLES: JSON.stringify({ [idOf(API)]: { role: 'read', activity_prefixes: [] } }) }),
    ).toThrow(/API_KEY_ROLES/);
    expect(() =>
      loadConfig({
        ...base,
        API_KEY_ROLES: JSON.stringify({ [idOf(API)]: { role: 'read', activity_prefixes: ['has space'] } }),
      }),
    ).toThrow(/printable ASCII/);
    expect(() => loadConfig({ ...base, API_KEY_ROLES: '{nope' })).toThrow(/API_KEY_ROLES: must be JSON/);
    expect(() => loadConfig({ ...base, API_KEY_ROLES: '{"my-key": {"role": "read"}}' })).toThrow(/key ids/);
  });
});
