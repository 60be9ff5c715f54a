/**
 * The client cannot drift from the API: the served OpenAPI document and the
 * client's operation table list the same operations, every schema of the
 * table is the very object the route declares (one declaration, in
 * contracts or webhooks), and every client method calls the operation it
 * claims to — checked against the real API (Postgres, Temporal) so the
 * answers are parsed too.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { z } from 'zod';
import {
  ActivityCoreClient,
  ActivityCoreProblem,
  collect,
  operations,
  type OperationName,
  type OperationSpec,
} from '../src/index';
import { startStack, TEST_KEY, type TestStack } from '../../../test/harness';
import { listen } from './listen';
import { answerSchema, captureRouteSchemas, type RouteSchemas } from './route-schemas';

let stack: TestStack;
let baseUrl: string;
let documented: Set<string>;
let routes: Map<string, RouteSchemas>;

const table = Object.entries(operations) as Array<[OperationName, OperationSpec]>;
const keyOf = (spec: Pick<OperationSpec, 'method' | 'path'>): string => `${spec.method} ${spec.path}`;

beforeAll(async () => {
  // Payload encryption on, so the codec routes are served (and documented) too.
  stack = await startStack({
    worker: false,
    env: { API_KEYS: TEST_KEY, PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` },
  });
  baseUrl = await listen(stack);
  const served = await fetch(`${baseUrl}/openapi.json`);
  expect(served.status).toBe(200);
  const doc = (await served.json()) as { paths: Record<string, Record<string, unknown>> };
  documented = new Set(
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'put', 'post', 'delete', 'patch'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );
  routes = await captureRouteSchemas();
});
afterAll(async () => {
  await stack?.close();
});

describe('the client and the served OpenAPI document', () => {
  test('every documented operation has exactly one entry in the client and every entry is documented', () => {
    const keys = table.map(([, spec]) => keyOf(spec));
    expect(new Set(keys).size, 'two client operations share a method and path').toBe(keys.length);
    const missing = [...documented].filter((key) => !keys.includes(key)).sort();
    const extra = keys.filter((key) => !documented.has(key)).sort();
    expect({ missing, extra }).toEqual({ missing: [], extra: [] });
    expect(documented.size).toBeGreaterThanOrEqual(37);
  });

  test('the routes read off the route plugins are exactly the documented ones', () => {
    const visible = [...routes.values()]
      .filter((route) => !route.hidden)
      .map((route) => `${route.method} ${route.path}`);
    expect(visible.sort()).toEqual([...documented].sort());
  });
});

describe('the client sends what each route validates and expects what it answers, declared once', () => {
  test.each(table)("%s: the request body is the route's own schema object", (name, spec) => {
    const route = routes.get(keyOf(spec))!;
    if (spec.rawBody === true) {
      expect(route.body, `${name} sends raw bytes; the route declares a JSON body`).toBeUndefined();
      return;
    }
    expect(spec.body === undefined, `${name}: body declared on only one side`).toBe(route.body === undefined);
    expect(spec.body === route.body, `${name}: the client's body schema is not the route's`).toBe(true);
  });

  test.each(table)("%s: query, path parameters and the headers the client sends are the route's own", (name, spec) => {
    const route = routes.get(keyOf(spec))!;
    expect(spec.query === route.querystring, `${name}: the client's query schema is not the route's`).toBe(true);
    const pathParams = [...spec.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
    const routeParams = route.params === undefined ? [] : Object.keys((route.params as z.ZodObject).shape).sort();
    expect(pathParams).toEqual(routeParams);
    // The route may document headers the client does not send; each one it sends is the route's own schema.
    if (spec.headers !== undefined) {
      expect(route.headers, `${name}: the client sends headers the route does not declare`).toBeDefined();
      const mine = (spec.headers as z.ZodObject).shape;
      const theirs = (route.headers as z.ZodObject).shape;
      for (const [header, schema] of Object.entries(mine))
        expect(theirs[header] === schema, `${name}: header ${header}`).toBe(true);
    }
  });

  test.each(table)("%s: the result schemas are the route's own response schemas", (name, spec) => {
    const route = routes.get(keyOf(spec))!;
    // Success answers, plus any documented non-problem answer the client returns (503 of /readyz).
    const listed = Object.keys(spec.responses).map(Number);
    const routeResults = Object.keys(route.response)
      .map(Number)
      .filter((status) => status < 400 || listed.includes(status));
    expect(listed.sort()).toEqual(routeResults.sort());
    for (const status of listed) {
      const documented = answerSchema(route.response[status], spec.text === true ? 'text/plain' : 'application/json');
      // A text answer is documented as text, never as JSON.
      if (spec.text === true) expect(answerSchema(route.response[status]), `${name} ${status}`).toBeUndefined();
      expect(
        spec.responses[status] === documented,
        `${name} ${status}: the client's result schema is not the route's`,
      ).toBe(true);
    }
  });
});

interface Recorded {
  method: string;
  path: string;
  status: number | undefined;
  body: unknown;
}

/** Which operation a request was for: its method and the template its path fits. */
function operationOf(method: string, path: string): OperationName | undefined {
  for (const [name, spec] of table) {
    const pattern = new RegExp(`^${spec.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (spec.method === method && pattern.test(path)) return name;
  }
  return undefined;
}

describe('every client method calls its operation, and the real answers parse with its result schema', () => {
  test('each method, called against the API, sends the request of the operation it is for', async () => {
    const recorded: Recorded[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const method = init?.method ?? 'GET';
      try {
        const response = await fetch(input, init);
        const text = await response.clone().text();
        // As the client reads it: no content is null, text (metrics) stays text.
        let body: unknown = text === '' ? null : text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        recorded.push({ method, path: url.pathname, status: response.status, body });
        return response;
      } catch (error) {
        recorded.push({ method, path: url.pathname, status: undefined, body: undefined });
        throw error;
      }
    };
    const client = new ActivityCoreClient({
      baseUrl,
      apiKey: TEST_KEY,
      fetch: recordingFetch,
      retry: { maxAttempts: 1 },
    });

    const cron = await client.activities.create({
      name: 'drift-cron',
      triggers: [{ type: 'cron', cron: '0 * * * *' }],
      tasks: [{ type: 'noop' }],
    });
    const doomed = await client.activities.create({ name: 'drift-doomed', tasks: [{ type: 'noop' }] });
    const hourAgo = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000).toISOString();
    const sent = await client.events.send({
      event_type: 'drift.check',
      source: 'drift',
      occurred_at: new Date().toISOString(),
    });
    const payloads = await client.codec.encode({
      payloads: [
        {
          metadata: { encoding: Buffer.from('json/plain').toString('base64') },
          data: Buffer.from('{}').toString('base64'),
        },
      ],
    });
    recorded.length = 0;

    /** Every public method, in the order they run, with the operation it must call; helpers may call it more than once. */
    const calls: Array<{ method: string; operation: OperationName; helper?: true; call: () => Promise<unknown> }> = [
      { method: 'health.live', operation: 'getLiveness', call: () => client.health.live() },
      { method: 'health.ready', operation: 'getReadiness', call: () => client.health.ready() },
      { method: 'health.metrics', operation: 'getMetrics', call: () => client.health.metrics() },
      {
        method: 'activities.create',
        operation: 'createActivity',
        call: () => client.activities.create({ name: 'drift-created', tasks: [{ type: 'noop' }] }),
      },
      {
        method: 'activities.put',
        operation: 'putActivity',
        call: () =>
          client.activities.put(doomed.id, { name: 'drift-doomed', description: 'changed', tasks: [{ type: 'noop' }] }),
      },
      { method: 'activities.get', operation: 'getActivity', call: () => client.activities.get(cron.id) },
      {
        method: 'activities.list',
        operation: 'listActivities',
        call: () => client.activities.list({ limit: 1, enabled: true }),
      },
      {
        method: 'activities.listAll',
        operation: 'listActivities',
        helper: true,
        call: () => collect(client.activities.listAll({ limit: 1 })),
      },
      {
        method: 'activities.findByName',
        operation: 'listActivities',
        helper: true,
        call: () => client.activities.findByName('drift-cron'),
      },
      {
        method: 'activities.versions',
        operation: 'listActivityVersions',
        call: () => client.activities.versions(cron.id, { limit: 1 }),
      },
      {
        method: 'activities.allVersions',
        operation: 'listActivityVersions',
        helper: true,
        call: () => collect(client.activities.allVersions(cron.id, { limit: 1 })),
      },
      {
        method: 'activities.version',
        operation: 'getActivityVersion',
        call: () => client.activities.version(cron.id, 1),
      },
      { method: 'activities.diff', operation: 'diffActivityVersions', call: () => client.activities.diff(doomed.id) },
      {
        method: 'activities.disable',
        operation: 'disableActivity',
        call: () => client.activities.disable(doomed.id, { whenDisabled: { action: 'hold', ttl: '1h' } }),
      },
      {
        method: 'activities.heldEvents',
        operation: 'listHeldEvents',
        call: () => client.activities.heldEvents(doomed.id, { limit: 5 }),
      },
      {
        method: 'activities.discardHeld',
        operation: 'discardHeldEvents',
        call: () => client.activities.discardHeld(doomed.id, { eventIds: ['evt_drift_none'] }),
      },
      {
        method: 'activities.enable',
        operation: 'enableActivity',
        call: () => client.activities.enable(doomed.id, { releaseHeld: false }),
      },
      {
        method: 'activities.releaseHeld',
        operation: 'releaseHeldEvents',
        call: () => client.activities.releaseHeld(doomed.id),
      },
      { method: 'activities.delete', operation: 'deleteActivity', call: () => client.activities.delete(doomed.id) },
      {
        method: 'events.send',
        operation: 'sendEvents',
        call: () =>
          client.events.send([{ event_type: 'drift.check', source: 'drift', occurred_at: new Date().toISOString() }]),
      },
      { method: 'events.get', operation: 'getEvent', call: () => client.events.get(sent.event_id) },
      { method: 'events.replay', operation: 'replayEvent', call: () => client.events.replay(sent.event_id) },
      {
        method: 'events.bulkReplay',
        operation: 'bulkReplay',
        call: () =>
          client.events.bulkReplay({ filter: { from: hourAgo, to: new Date().toISOString() }, dry_run: true }),
      },
      {
        method: 'events.bulkReplayStatus',
        operation: 'getBulkReplay',
        call: () => client.events.bulkReplayStatus('00000000-0000-4000-8000-000000000000'),
      },
      { method: 'runs.list', operation: 'listRuns', call: () => client.runs.list({ limit: 5, status: 'running' }) },
      {
        method: 'runs.listAll',
        operation: 'listRuns',
        helper: true,
        call: () => collect(client.runs.listAll({ limit: 5 })),
      },
      { method: 'runs.get', operation: 'getRun', call: () => client.runs.get('00000000-0000-5000-8000-000000000000') },
      {
        method: 'runs.cancel',
        operation: 'cancelRun',
        call: () => client.runs.cancel('00000000-0000-5000-8000-000000000000'),
      },
      {
        method: 'runs.rerun',
        operation: 'rerunRun',
        call: () => client.runs.rerun('00000000-0000-5000-8000-000000000000', { from: 'start' }),
      },
      {
        method: 'runs.bulkRerun',
        operation: 'bulkRerun',
        call: () =>
          client.runs.bulkRerun({
            filter: { activity_id: cron.id, status: 'failed', from: hourAgo, to: new Date().toISOString() },
            dry_run: true,
          }),
      },
      {
        method: 'runs.bulkRerunStatus',
        operation: 'getBulkRerun',
        call: () => client.runs.bulkRerunStatus('00000000-0000-4000-8000-000000000000'),
      },
      { method: 'schedules.describe', operation: 'describeSchedules', call: () => client.schedules.describe(cron.id) },
      {
        method: 'schedules.pause',
        operation: 'pauseSchedules',
        call: () => client.schedules.pause(cron.id, 'drift check'),
      },
      { method: 'schedules.resume', operation: 'resumeSchedules', call: () => client.schedules.resume(cron.id) },
      { method: 'schedules.trigger', operation: 'triggerNow', call: () => client.schedules.trigger(cron.id) },
      {
        method: 'schedules.backfill',
        operation: 'backfill',
        call: () => client.schedules.backfill(cron.id, { start: hourAgo, end: hourAgo }),
      },
      { method: 'schedules.fires', operation: 'listFires', call: () => client.schedules.fires(cron.id, { limit: 10 }) },
      {
        method: 'schedules.allFires',
        operation: 'listFires',
        helper: true,
        call: () => collect(client.schedules.allFires(cron.id, { limit: 1 })),
      },
      { method: 'schedules.explain', operation: 'explainFire', call: () => client.schedules.explain(cron.id, hourAgo) },
      { method: 'schedules.reconcile', operation: 'reconcileSchedules', call: () => client.schedules.reconcile() },
      {
        method: 'webhookSources.create',
        operation: 'createWebhookSource',
        call: () =>
          client.webhookSources.create({
            scheme: 'github',
            name: 'drift',
            secret: 'drift-secret-0123456789',
            allow_replay_without_timestamp: true,
            event_type_from_unsigned_header: true,
          }),
      },
      {
        method: 'webhookSources.put',
        operation: 'putWebhookSource',
        call: () =>
          client.webhookSources.put('drift', {
            scheme: 'github',
            secret: 'drift-secret-9876543210',
            allow_replay_without_timestamp: true,
            event_type_from_unsigned_header: true,
          }),
      },
      { method: 'webhookSources.list', operation: 'listWebhookSources', call: () => client.webhookSources.list() },
      { method: 'webhookSources.get', operation: 'getWebhookSource', call: () => client.webhookSources.get('drift') },
      {
        method: 'webhooks.deliver',
        operation: 'deliverWebhook',
        call: () => client.webhooks.deliver('drift', '{}', { 'content-type': 'application/json' }),
      },
      {
        method: 'webhookSources.delete',
        operation: 'deleteWebhookSource',
        call: () => client.webhookSources.delete('drift'),
      },
      { method: 'codec.decode', operation: 'codecDecode', call: () => client.codec.decode(payloads) },
      { method: 'codec.encode', operation: 'codecEncode', call: () => client.codec.encode({ payloads: [] }) },
      {
        method: 'audit.list',
        operation: 'listAudit',
        call: () => client.audit.list({ limit: 5, action: 'activity.create' }),
      },
      {
        method: 'deadLetters.list',
        operation: 'listDeadLetters',
        call: () => client.deadLetters.list({ limit: 5, activityId: doomed.id }),
      },
      {
        method: 'deadLetters.retry',
        operation: 'retryDeadLetters',
        call: () => client.deadLetters.retry({ filter: { activity_id: doomed.id } }),
      },
      {
        method: 'deadLetters.discard',
        operation: 'discardDeadLetters',
        call: () => client.deadLetters.discard({ filter: { activity_id: doomed.id, reason: 'start_refused' } }),
      },
      {
        method: 'audit.listAll',
        operation: 'listAudit',
        helper: true,
        call: () => collect(client.audit.listAll({ limit: 5 })),
      },
    ];

    // Every public method of every namespace is in the list above.
    const namespaces = [
      'health',
      'activities',
      'events',
      'runs',
      'schedules',
      'webhookSources',
      'webhooks',
      'codec',
      'audit',
      'deadLetters',
    ] as const;
    const methods = namespaces.flatMap((namespace) =>
      Object.keys(client[namespace]).map((method) => `${namespace}.${method}`),
    );
    expect(methods.sort(), 'a client method is missing from this test').toEqual(
      calls.map((call) => call.method).sort(),
    );
    const ownKeys = Object.keys(client).filter((key) => !(namespaces as readonly string[]).includes(key));
    expect(ownKeys, 'the client grew a namespace this test does not know').toEqual([]);

    const refused: string[] = [];
    const details: string[] = [];
    for (const entry of calls) {
      recorded.length = 0;
      try {
        await entry.call();
      } catch (error) {
        if (!(error instanceof ActivityCoreProblem)) throw error;
        refused.push(`${entry.method}: ${error.status}`);
        details.push(`${entry.method}: ${error.message}`);
      }
      const hit = recorded.map((request) => operationOf(request.method, request.path));
      expect(hit.length, `${entry.method} sent no request`).toBeGreaterThan(0);
      expect(new Set(hit), `${entry.method} called ${hit.join(', ')}`).toEqual(new Set([entry.operation]));
      if (entry.helper !== true) expect(hit, `${entry.method} sent more than one request`).toHaveLength(1);
      // An answer the client returns as a result must parse with the result schema its type comes from.
      for (const request of recorded) {
        const schema = (operations[entry.operation] as OperationSpec).responses[request.status ?? 0];
        if (schema === undefined) continue;
        const parsed = schema.safeParse(request.body);
        expect(parsed.success, `${entry.method} ${request.status}: ${parsed.success ? '' : parsed.error.message}`).toBe(
          true,
        );
      }
    }
    // Exactly one primary method per operation.
    const primary = calls.filter((call) => call.helper !== true).map((call) => call.operation);
    expect(primary.sort()).toEqual(table.map(([name]) => name).sort());
    // Only the calls that cannot succeed here were refused: no run exists (no worker runs here), and the delivery is unsigned.
    expect(refused.sort(), details.join('\n')).toEqual([
      'events.bulkReplayStatus: 404',
      'runs.bulkRerunStatus: 404',
      'runs.cancel: 404',
      'runs.get: 404',
      'runs.rerun: 404',
      'webhooks.deliver: 401',
    ]);
  });
});
