import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from '@activity-core/temporal/client';
import { workflowTracingSinks } from '@activity-core/temporal/worker';
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { createTestDatabase, silentLogger, testConfig, waitFor, workflowBundle } from './harness';
import { startHttpTarget } from './http-target';

// The real API and worker in this process, with tracing started as the entry points do, but into memory.
const exporter = new InMemorySpanExporter();
const apiLog: Record<string, unknown>[] = [];
let tracing: Tracing;
let api: ApiApp;
let worker: WorkerApp;
let client: Client;
let connection: Connection;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'activity-core-test', spanProcessor: new SimpleSpanProcessor(exporter) });
  [database, target] = await Promise.all([
    createTestDatabase(),
    startHttpTarget(() => ({ status: 200, body: { ok: true } })),
  ]);
  const config = testConfig(database.url);
  api = await createApiApp(config, {
    logger: {
      level: 'info',
      stream: { write: (line: string) => void apiLog.push(JSON.parse(line) as Record<string, unknown>) },
    },
    dispatcherIntervalMs: 200,
    tracing,
  });
  worker = await createWorkerApp(config, { logger: silentLogger, workflowBundle: await workflowBundle(), tracing });
  void worker.run();
  connection = await Connection.connect({ address: config.temporal.address });
  client = new Client({ connection, namespace: config.temporal.namespace });
});
afterAll(async () => {
  await worker?.close();
  await api?.close();
  await connection?.close();
  await target?.close();
  await database?.drop();
  await tracing?.shutdown();
});

const id = (span: ReadableSpan): string => span.spanContext().spanId;

describe('traces', () => {
  test('one posted event yields one connected trace: request, ingest, workflow start, run workflow, task child workflows and their activities', async () => {
    const created = await api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'traced',
        triggers: [{ type: 'event', event_type: 'traced.go' }],
        tasks: [{ type: 'http', config: { url: `${target.url}/hook` } }, { type: 'noop' }],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const activityId = created.json().id as string;
    const posted = await api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'evt_traced',
        event_type: 'traced.go',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    expect(posted.statusCode, posted.body).toBe(202);
    const workflowId = eventRunWorkflowId(activityId, 'evt_traced');
    await client.workflow.getHandle(workflowId).result();

    const request = await waitFor('the request span', async () =>
      exporter.getFinishedSpans().find((span) => span.kind === SpanKind.SERVER && span.name === 'POST /v1/events'),
    );
    const traceId = request.spanContext().traceId;
    // Workflow spans reach the exporter through the worker's sink when each workflow ends.
    const spans = await waitFor('the run workflow span', async () => {
      const inTrace = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
      return inTrace.some((span) => span.name === 'RunWorkflow:RunActivityWorkflow') &&
        inTrace.filter((span) => span.name === 'RunWorkflow:TaskWorkflow').length === 2
        ? inTrace
        : undefined;
    });
    const byId = new Map(spans.map((span) => [id(span), span]));
    const parentOf = (span: ReadableSpan): ReadableSpan | undefined =>
      span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId);
    const only = (name: string): ReadableSpan => {
      const found = spans.filter((span) => span.name === name);
      expect(
        found.map((span) => span.name),
        name,
      ).toEqual([name]);
      return found[0] as ReadableSpan;
    };

    // Every span but the request's has its parent in the same trace: one tree.
    for (const span of spans)
      if (span !== request) expect(parentOf(span), `${span.name} has a parent in the trace`).toBeDefined();
    expect(request.attributes['http.route']).toBe('/v1/events');
    expect(request.attributes['http.response.status_code']).toBe(202);
    // The request's one log line names its trace.
    expect(apiLog).toContainEqual(
      expect.objectContaining({ msg: 'request', route: '/v1/events', status: 202, traceId }),
    );

    const ingest = only('event ingest');
    expect(parentOf(ingest)).toBe(request);
    expect(ingest.attributes['activity_core.event_id']).toBe('evt_traced');
    expect(parentOf(only('event accept'))).toBe(ingest);
    const start = only('StartWorkflow:RunActivityWorkflow');
    expect(parentOf(start)).toBe(ingest);
    const run = only('RunWorkflow:RunActivityWorkflow');
    expect(parentOf(run)).toBe(start);

    const childStarts = spans.filter((span) => span.name === 'StartChildWorkflow:TaskWorkflow');
    expect(childStarts).toHaveLength(2);
    for (const childStart of childStarts) expect(parentOf(childStart)).toBe(run);
    const taskRuns = spans.filter((span) => span.name === 'RunWorkflow:TaskWorkflow');
    for (const taskRun of taskRuns) expect(childStarts).toContain(parentOf(taskRun));

    // Each activity runs under the span of the workflow that scheduled it; the http task's under a task workflow.
    const activityRuns = spans.filter((span) => span.name.startsWith('RunActivity:'));
    expect(activityRuns.length).toBeGreaterThan(2);
    for (const activityRun of activityRuns) {
      const scheduled = parentOf(activityRun);
      expect(scheduled?.name).toBe(`StartActivity:${activityRun.name.slice('RunActivity:'.length)}`);
      expect([run, ...taskRuns]).toContain(parentOf(scheduled as ReadableSpan));
    }
    const httpTask = only('RunActivity:httpTask');
    expect(taskRuns).toContain(parentOf(parentOf(httpTask) as ReadableSpan));
    expect(httpTask.attributes).toMatchObject({ temporalWorkflowId: expect.stringContaining(runIdFor(workflowId)) });

    // Traced workflows stay deterministic: their histories replay on the current bundle.
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: await workflowBundle(), sinks: workflowTracingSinks(undefined) },
        history,
        workflowId,
      ),
    ).resolves.toBeUndefined();
  });
});
