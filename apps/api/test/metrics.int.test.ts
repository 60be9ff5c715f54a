import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp, type ApiApp } from '../src/app';
import {
  AUTH,
  createTestDatabase,
  TEST_KEY,
  startStack,
  testConfig,
  waitFor,
  type TestStack,
} from '../../../test/harness';
import { killHard, spawnWorkerProcess } from '../../../test/worker-process';

/** The value of one sample in a Prometheus text exposition, or undefined when the sample is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',').filter((part) => part.length > 0);
    if (wanted.every((label) => present.includes(label)) && present.length === wanted.length) return Number(match[3]);
  }
  return undefined;
}

async function scrape(api: ApiApp, headers: Record<string, string> = {}): Promise<string> {
  const response = await api.server.inject({ method: 'GET', url: '/metrics', headers });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.headers['content-type']).toContain('text/plain');
  return response.body;
}

const event = (id: string, type: string) => ({
  event_id: id,
  event_type: type,
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { id },
});

describe('GET /metrics on a running stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ env: { API_KEYS: TEST_KEY } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('needs the management key, like the rest of the management API', async () => {
    const response = await stack.api.server.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(401);
  });

  test('counts accepted and duplicate events, their routing outcomes and the requests by route template', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: AUTH,
      payload: {
        name: 'metered',
        triggers: [{ type: 'event', event_type: 'metrics.ping' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const before = await scrape(stack.api, AUTH);
    expect(sample(before, 'activity_core_activities_enabled')).toBe(1);
    expect(sample(before, 'activity_core_metrics_postgres_up')).toBe(1);

    for (let i = 0; i < 2; i += 1) {
      const sent = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        headers: AUTH,
        payload: event('evt_metered', 'metrics.ping'),
      });
      expect(sent.statusCode).toBe(202);
    }
    const unmatched = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      headers: AUTH,
      payload: event('evt_nobody', 'metrics.nobody'),
    });
    expect(unmatched.statusCode).toBe(202);
    const bad = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      headers: AUTH,
      payload: { event_type: 42 },
    });
    expect(bad.statusCode).toBe(400);
    await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${crypto.randomUUID()}`, headers: AUTH });

    const text = await scrape(stack.api, AUTH);
    expect(sample(text, 'activity_core_events_ingested_total', { status: 'accepted' })).toBe(2);
    expect(sample(text, 'activity_core_events_ingested_total', { status: 'duplicate' })).toBe(1);
    expect(sample(text, 'activity_core_event_routes_total', { outcome: 'started' })).toBe(1);
    expect(sample(text, 'activity_core_event_routes_total', { outcome: 'duplicate' })).toBe(1);
    expect(
      sample(text, 'activity_core_http_requests_total', { method: 'POST', route: '/v1/events', status_code: '202' }),
    ).toBe(3);
    expect(
      sample(text, 'activity_core_http_requests_total', { method: 'POST', route: '/v1/events', status_code: '400' }),
    ).toBe(1);
    // Route templates, not raw URLs: one label value however many run ids are asked for.
    expect(
      sample(text, 'activity_core_http_requests_total', {
        method: 'GET',
        route: '/v1/runs/:run_id',
        status_code: '404',
      }),
    ).toBe(1);
    expect(
      sample(text, 'activity_core_http_request_duration_seconds_count', { method: 'POST', route: '/v1/events' }),
    ).toBe(4);
    expect(sample(text, 'activity_core_api_process_resident_memory_bytes')).toBeGreaterThan(0);

    // The run finishes on the worker; the shared-state gauges follow Postgres.
    await waitFor('the run to end', async () => {
      const runs = await stack.api.server.inject({ method: 'GET', url: '/v1/runs', headers: AUTH });
      return runs.json().items.some((run: { status: string }) => run.status === 'succeeded') ? true : undefined;
    });
    const after = await scrape(stack.api, AUTH);
    expect(sample(after, 'activity_core_runs_running')).toBe(0);
    expect(sample(after, 'activity_core_events_pending_routing')).toBe(0);
    expect(sample(after, 'activity_core_events_pending_routing_oldest_seconds')).toBe(0);
  });
});

describe('GET /metrics while Temporal or Postgres is away', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let api: ApiApp;
  beforeAll(async () => {
    database = await createTestDatabase();
    // Nothing listens on port 1: every event is accepted and waits for routing.
    api = await createApiApp(testConfig(database.url, { TEMPORAL_ADDRESS: '127.0.0.1:1' }), {
      logger: false,
      dispatcher: false,
      retention: false,
    });
  });
  afterAll(async () => {
    await api?.close();
    await database?.drop();
  });

  test('reports accepted events waiting for routing and their age, and still answers without Postgres', async () => {
    const created = await api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'stranded',
        triggers: [{ type: 'event', event_type: 'metrics.stranded' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    for (const id of ['evt_s1', 'evt_s2', 'evt_s3']) {
      const sent = await api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: event(id, 'metrics.stranded'),
      });
      expect(sent.statusCode).toBe(202);
      expect(sent.json().runs[0].status).toBe('pending');
    }
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const text = await scrape(api);
    expect(sample(text, 'activity_core_events_pending_routing')).toBe(3);
    expect(sample(text, 'activity_core_events_pending_routing_oldest_seconds')).toBeGreaterThan(1);
    expect(sample(text, 'activity_core_event_routes_total', { outcome: 'pending' })).toBe(3);

    // Postgres goes away (the database is dropped under the pool): the scrape still answers and says so.
    await database.drop();
    const blind = await scrape(api);
    expect(sample(blind, 'activity_core_metrics_postgres_up')).toBe(0);
    expect(sample(blind, 'activity_core_events_pending_routing')).toBeNaN();
    expect(sample(blind, 'activity_core_events_ingested_total', { status: 'accepted' })).toBe(3);
  });
});

describe('the worker with WORKER_METRICS_BIND_ADDRESS', () => {
  let stack: TestStack;
  let worker: ReturnType<typeof spawnWorkerProcess> | undefined;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    if (worker !== undefined) await killHard(worker.child);
    await stack?.close();
  });

  test("serves the Temporal SDK's Prometheus metrics, which count the workflows it ran", async () => {
    const port = await freePort();
    worker = spawnWorkerProcess(stack.config, { WORKER_METRICS_BIND_ADDRESS: `127.0.0.1:${port}` });
    await worker.ready;
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'worker-metered',
        triggers: [{ type: 'event', event_type: 'metrics.worker' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const sent = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: event('evt_worker_metered', 'metrics.worker'),
    });
    expect(sent.json().runs[0].status).toBe('started');
    await stack.client.workflow.getHandle(sent.json().runs[0].workflow_id).result();

    const completed = await waitFor('the SDK to count the completed workflows', async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const total = text
        .split('\n')
        .filter(
          (line) =>
            line.startsWith('temporal_workflow_completed_total') && line.includes(stack.config.temporal.taskQueue),
        )
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
      // The run and its one task workflow.
      return total >= 2 ? total : undefined;
    });
    expect(completed).toBe(2);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
