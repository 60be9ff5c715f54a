import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import productPackage from '../../../package.json' with { type: 'json' };
import type { ApiMetrics } from './metrics';
import { PROBLEM_MEDIA_TYPE, standardErrorStatuses } from './openapi-document';
import { buildServer, type ServerDeps } from './server';

/**
 * The served document, from a server whose services are never called:
 * building the document reads only the routes.
 */
let app: FastifyInstance;
let document: {
  info: { version: string };
  security: unknown[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};

interface Response {
  description: string;
  content?: Record<string, { schema: unknown }>;
  headers?: Record<string, { required?: boolean; schema: { type: string } }>;
}
interface Operation {
  security?: unknown[];
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { required: boolean };
  responses: Record<string, Response>;
}

const unused = new Proxy({}, { get: () => () => Promise.reject(new Error('not called while building the document')) });

beforeAll(async () => {
  const metrics = {
    observeRequest: () => undefined,
    registry: { metrics: async () => '', contentType: 'text/plain' },
  } as unknown as ApiMetrics;
  const deps = {
    activities: unused,
    definitionHistory: unused,
    events: unused,
    runs: unused,
    schedules: unused,
    webhooks: unused,
    probes: [],
    metrics,
    codec: { codec: unused, allowedOrigins: [] },
  } as unknown as ServerDeps;
  app = await buildServer(deps, {
    auth: { apiKeys: ['a-management-key-of-at-least-32-characters'], ingestKeys: [] },
    bodyLimitBytes: 1_048_576,
    logger: false,
    rateLimit: { max: 100, windowMs: 60_000 },
  });
  await app.ready();
  document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
});
afterAll(async () => {
  await app?.close();
});

const operations = (): Array<[string, Operation]> =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(
      ([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as [string, Operation],
    ),
  );

describe('the served OpenAPI document', () => {
  test('states the product version', () => {
    expect(document.info.version).toBe(productPackage.version);
  });

  test('every operation documents a 4xx answer (but the health probes, which read no input and need no key), and every error answer is problem+json with the Problem schema (the readiness 503 is a readiness body)', () => {
    const wrong: string[] = [];
    for (const [name, operation] of operations()) {
      const statuses = Object.keys(operation.responses).map(Number);
      const probe = name === 'GET /healthz' || name === 'GET /readyz';
      if (statuses.some((status) => status >= 400 && status < 500) === probe)
        wrong.push(`${name}: ${probe ? 'a 4xx it cannot answer' : 'no 4xx'}`);
      for (const status of statuses.filter((code) => code >= 400)) {
        if (name === 'GET /readyz' && status === 503) continue;
        const content = operation.responses[status]!.content ?? {};
        if (
          Object.keys(content).join() !== PROBLEM_MEDIA_TYPE ||
          (content[PROBLEM_MEDIA_TYPE]!.schema as { $ref?: string }).$ref !== '#/components/schemas/Problem'
        ) {
          wrong.push(`${name} ${status}: ${Object.keys(content).join() || 'no content'}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(document.components.schemas.Problem).toBeDefined();
  });

  test('routes that take no API key declare no security, and every other route the bearer key with the least role it needs', () => {
    expect(document.security).toEqual([{ apiKey: [] }]);
    const routes = new Map(
      app.routeScopes.map((route) => [`${route.method} ${route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`, route]),
    );
    const wrong: string[] = [];
    for (const [name, operation] of operations()) {
      const route = routes.get(name);
      if (route === undefined) wrong.push(`${name}: not a route`);
      const scope = route?.scope;
      const open = scope === 'public' || scope === 'webhook';
      if (open && JSON.stringify(operation.security) !== '[]')
        wrong.push(`${name} (${scope}): security ${JSON.stringify(operation.security)}`);
      if (!open && JSON.stringify(operation.security) !== JSON.stringify([{ apiKey: [route?.role] }]))
        wrong.push(`${name} (${scope}): security ${JSON.stringify(operation.security)}`);
      if (!open && (operation as { 'x-required-role'?: string })['x-required-role'] !== route?.role)
        wrong.push(`${name}: x-required-role is not ${route?.role}`);
    }
    expect(wrong).toEqual([]);
    expect(document.paths['/healthz']!.get!.security).toEqual([]);
    expect(document.paths['/readyz']!.get!.security).toEqual([]);
    expect(document.paths['/v1/webhooks/{source}']!.post!.security).toEqual([]);
    expect(document.paths['/v1/activities/{id}']!.put!.security).toEqual([{ apiKey: ['write'] }]);
    expect(document.paths['/v1/runs/{run_id}/cancel']!.post!.security).toEqual([{ apiKey: ['operate'] }]);
    expect(document.paths['/v1/audit']!.get!.security).toEqual([{ apiKey: ['read'] }]);
  });

  test('documents a 403 where a role or an owned activity can be lacking, and none on reads every key may make', () => {
    expect(Object.keys(document.paths['/v1/activities/{id}']!.put!.responses)).toContain('403');
    expect(Object.keys(document.paths['/v1/schedules/reconcile']!.post!.responses)).toContain('403');
    expect(Object.keys(document.paths['/v1/runs']!.get!.responses)).not.toContain('403');
    expect(Object.keys(document.paths['/v1/audit']!.get!.responses)).not.toContain('403');
  });

  test('documents the statuses every route of its kind can answer, with WWW-Authenticate on a bearer 401 and Retry-After on 429 and 503', () => {
    const activity = document.paths['/v1/activities/{id}']!.put!;
    expect(Object.keys(activity.responses)).toEqual(
      expect.arrayContaining(['400', '401', '404', '413', '415', '429', '500', '503']),
    );
    expect(activity.responses['401']!.headers!['WWW-Authenticate']).toMatchObject({ required: true });
    expect(activity.responses['429']!.headers!['Retry-After']).toMatchObject({
      required: true,
      schema: { type: 'integer' },
    });
    expect(activity.responses['503']!.headers!['Retry-After']).toMatchObject({ required: true });
    // Answers of rate-limited routes may carry the limit's headers, successes included.
    expect(Object.keys(activity.responses['200']!.headers ?? {})).toEqual([
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
    ]);
    expect(document.paths['/metrics']!.get!.responses['401']).toBeDefined();
    expect(Object.keys(document.paths['/metrics']!.get!.responses['200']!.content!)).toEqual(['text/plain']);
    // A webhook delivery is verified by its signature: its 401 names no bearer scheme, and it reads any media type.
    const delivery = document.paths['/v1/webhooks/{source}']!.post!;
    expect(delivery.responses['401']!.headers?.['WWW-Authenticate']).toBeUndefined();
    expect(delivery.responses['415']).toBeUndefined();
    expect(Object.keys(document.paths['/healthz']!.get!.responses)).toEqual(['200', '500']);
  });

  test('the answers carry the headers the document declares: WWW-Authenticate on a 401, Retry-After on a 429, integer x-ratelimit-* on the rest', async () => {
    const refused = await app.inject({ method: 'GET', url: '/metrics' });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="activity-core"');
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    const headers = { authorization: 'Bearer a-management-key-of-at-least-32-characters' };
    const answers = [];
    for (let i = 0; i < 101; i += 1) answers.push(await app.inject({ method: 'GET', url: '/metrics', headers }));
    expect(answers[0]!.statusCode).toBe(200);
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
      expect(answers[0]!.headers[name]).toMatch(/^\d+$/);
    const limited = answers.at(-1)!;
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  test('an optional request body is documented as optional', () => {
    expect(document.paths['/v1/activities/{id}/schedules/pause']!.post!.requestBody!.required).toBe(false);
    expect(document.paths['/v1/activities']!.post!.requestBody!.required).toBe(true);
  });

  test('limits checked when a definition is written are in the request schema only, and no internal mark is left', () => {
    const schemas = document.components.schemas as Record<string, { properties: Record<string, { pattern?: string }> }>;
    const written = new RegExp(schemas.ActivityDefinitionInput!.properties.run_timeout!.pattern!);
    expect(written.test('365d')).toBe(true);
    expect(written.test('366d')).toBe(false);
    expect(new RegExp(schemas.StoredActivityDefinition!.properties.run_timeout!.pattern!).test('366d')).toBe(true);
    expect(JSON.stringify(document)).not.toMatch(/x-on-write|x-activity-core-/);
  });
});

describe('standardErrorStatuses', () => {
  test('derives the statuses from what the route is', () => {
    expect(standardErrorStatuses({ method: 'get', path: '/healthz', scope: 'public', takesInput: false })).toEqual([
      500,
    ]);
    expect(
      standardErrorStatuses({ method: 'get', path: '/v1/runs', scope: 'management', role: 'read', takesInput: true }),
    ).toEqual([400, 401, 429, 500, 503]);
    expect(
      standardErrorStatuses({
        method: 'delete',
        path: '/v1/activities/{id}',
        scope: 'management',
        role: 'write',
        owns: 'activity',
        takesInput: true,
      }),
    ).toEqual([400, 401, 403, 404, 413, 415, 429, 500, 503]);
    expect(
      standardErrorStatuses({ method: 'post', path: '/v1/webhooks/{source}', scope: 'webhook', takesInput: true }),
    ).toEqual([400, 404, 413, 429, 500, 503]);
  });
});
