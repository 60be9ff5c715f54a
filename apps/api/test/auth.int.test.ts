import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from '../../../test/harness';

const API_KEY = 'management-key-0123456789abcdefghijkl';
const INGEST_KEY = 'ingest-key-0123456789abcdefghijklmnop';
const HASHED_KEY = 'configured-only-by-its-digest-0123456789';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: {
      API_KEYS: `${API_KEY},sha256:${createHash('sha256').update(HASHED_KEY).digest('hex')}`,
      INGEST_KEYS: INGEST_KEY,
      RATE_LIMIT_MAX: '5',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      // These tests send many wrong keys from one address on purpose; the per-address throttle is tested in rate-limit-abuse.int.test.ts.
      AUTH_FAILURE_LIMIT: '0',
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A concrete URL for a route pattern: every `:param` gets a value of the right shape. */
function concrete(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, (_, name: string) =>
    /^(id|run_id|activity_id)$/.test(name) ? '0b6f2b5e-1d5a-4a56-9b0a-6f7d2f0e9c11' : 'x',
  );
}

function expectUnauthorized(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  what: string,
): void {
  expect(response.statusCode, `${what}: ${response.body}`).toBe(401);
  if (response.body !== '') {
    expect(response.headers['content-type'], what).toContain('application/problem+json');
    expect(JSON.parse(response.body).type, what).toBe('urn:activity-core:problem:unauthorized');
  }
}

describe('authentication', () => {
  test('every route declares a scope, and the key-protected ones are most of the API', () => {
    const routes = stack.api.server.routeScopes;
    const keyed = routes.filter((route) => route.scope === 'management' || route.scope === 'ingest');
    expect(keyed.length).toBeGreaterThanOrEqual(15);
    expect(routes.filter((route) => route.scope === 'public').map((route) => route.url)).toEqual(
      expect.arrayContaining(['/healthz', '/readyz', '/openapi.json']),
    );
    // Only the service probes, the OpenAPI document and its UI are public.
    for (const route of routes.filter((r) => r.scope === 'public'))
      expect(route.url).toMatch(/^\/(healthz|readyz|openapi\.json|docs)/);
    expect(routes.filter((route) => route.scope === 'webhook').map((route) => route.url)).toEqual([
      '/v1/webhooks/:source',
    ]);
  });

  test('every key-protected route answers 401 without a key and with a wrong key', async () => {
    // Enumerated from the server, so a route added later is covered without touching this test.
    const keyed = stack.api.server.routeScopes.filter(
      (route) => route.scope === 'management' || route.scope === 'ingest',
    );
    console.info(
      `[auth] ${keyed.length} key-protected routes checked: ${keyed.map((r) => `${r.method} ${r.url}`).join(', ')}`,
    );
    for (const route of keyed) {
      const url = concrete(route.url);
      const what = `${route.method} ${route.url}`;
      const method = route.method as 'GET';
      expectUnauthorized(
        await stack.api.server.inject({ method, url, payload: method === 'GET' || method === 'HEAD' ? undefined : {} }),
        `${what} without a key`,
      );
      expectUnauthorized(
        await stack.api.server.inject({ method, url, headers: bearer('wrong-key') }),
        `${what} with a wrong key`,
      );
      expectUnauthorized(
        await stack.api.server.inject({ method, url, headers: { authorization: `Basic ${API_KEY}` } }),
        `${what} with a non-bearer scheme`,
      );
    }
  });

  test('a 401 names the scheme to use', async () => {
    const response = await stack.api.server.inject({ method: 'GET', url: '/v1/activities' });
    expect(response.headers['www-authenticate']).toBe('Bearer realm="activity-core"');
    expect(response.json().detail).toContain('Authorization: Bearer');
  });

  test('an ingest key may send events but not manage anything', async () => {
    const event = {
      event_id: 'auth-ingest-1',
      event_type: 'auth.test',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    };
    expect(
      (
        await stack.api.server.inject({
          method: 'POST',
          url: '/v1/events',
          payload: event,
          headers: bearer(INGEST_KEY),
        })
      ).statusCode,
    ).toBe(202);
    // A known key without the right: 403 (forbidden), not 401 — the caller is identified, the route is not theirs.
    for (const [url, what] of [
      ['/v1/events/auth-ingest-1', 'GET event with an ingest key'],
      ['/v1/activities', 'GET activities with an ingest key'],
    ] as const) {
      const response = await stack.api.server.inject({ method: 'GET', url, headers: bearer(INGEST_KEY) });
      expect(response.statusCode, `${what}: ${response.body}`).toBe(403);
      expect(response.headers['content-type'], what).toContain('application/problem+json');
      expect(JSON.parse(response.body).type, what).toBe('urn:activity-core:problem:forbidden');
    }
  });

  test('a management key works everywhere, including one configured only as a SHA-256 digest', async () => {
    expect(
      (await stack.api.server.inject({ method: 'GET', url: '/v1/activities', headers: bearer(API_KEY) })).statusCode,
    ).toBe(200);
    expect(
      (await stack.api.server.inject({ method: 'GET', url: '/v1/activities', headers: bearer(HASHED_KEY) })).statusCode,
    ).toBe(200);
    const event = {
      event_id: 'auth-mgmt-1',
      event_type: 'auth.test',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    };
    expect(
      (await stack.api.server.inject({ method: 'POST', url: '/v1/events', payload: event, headers: bearer(API_KEY) }))
        .statusCode,
    ).toBe(202);
  });

  test('public routes need no key', async () => {
    expect((await stack.api.server.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await stack.api.server.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(200);
  });
});

describe('rate limiting', () => {
  test('a key over its limit gets 429 problem+json with Retry-After, and other keys are unaffected', async () => {
    const key = bearer(INGEST_KEY);
    const event = (n: number) => ({
      event_id: `rl-${n}`,
      event_type: 'rate.test',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    });
    const statuses: number[] = [];
    // The ingest key already made requests in the tests above; send until refused.
    let refused: Awaited<ReturnType<TestStack['api']['server']['inject']>> | undefined;
    for (let n = 0; n < 10 && refused === undefined; n++) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: event(n),
        headers: key,
      });
      statuses.push(response.statusCode);
      if (response.statusCode === 429) refused = response;
    }
    expect(refused, `statuses: ${statuses.join(',')}`).toBeDefined();
    expect(statuses.filter((s) => s === 202).length).toBeLessThanOrEqual(5);
    expect(refused!.headers['content-type']).toContain('application/problem+json');
    expect(refused!.json()).toMatchObject({ status: 429, type: 'urn:activity-core:problem:rate-limited' });
    const retryAfter = Number(refused!.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The refused event was not stored.
    const stored = await stack.sql.query(`SELECT count(*)::int AS n FROM events WHERE event_id LIKE 'rl-%'`);
    expect(stored.rows[0].n).toBe(statuses.filter((s) => s === 202).length);

    // Another key has its own allowance; health checks are never limited.
    expect(
      (await stack.api.server.inject({ method: 'GET', url: '/v1/activities', headers: bearer(HASHED_KEY) })).statusCode,
    ).toBe(200);
    for (let n = 0; n < 8; n++)
      expect((await stack.api.server.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  test('requests with a wrong key are refused as 401 and never reach the rate limit', async () => {
    // Were the limit checked first, the sixth of these would be a 429.
    const statuses: number[] = [];
    for (let n = 0; n < 8; n++)
      statuses.push(
        (await stack.api.server.inject({ method: 'GET', url: '/v1/activities', headers: bearer('a-wrong-key') }))
          .statusCode,
      );
    expect(statuses).toEqual(Array(8).fill(401));
  });
});
