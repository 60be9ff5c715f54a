import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { createWorkerApp, type WorkerApp } from '../../../apps/worker/src/worker-app';
import { startStack, workflowBundle, type TestStack } from '../../../test/harness';

// The API from the harness; the worker built here, logging into an array (what an operator reads).
let stack: TestStack;
let worker: WorkerApp;
const logged: Array<{ level: string; obj: Record<string, unknown>; message: string | undefined }> = [];
const at =
  (level: string) =>
  (obj: object, message?: string): void =>
    void logged.push({ level, obj: obj as Record<string, unknown>, message });

beforeAll(async () => {
  stack = await startStack({ worker: false });
  worker = await createWorkerApp(stack.config, {
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    workflowBundle: await workflowBundle(),
  });
  void worker.run();
});
afterAll(async () => {
  await worker?.close();
  await stack?.close();
});

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function runHttpTask(name: string, url: string) {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [{ type: 'event', event_type: `${name}.go` }],
      tasks: [{ type: 'http', config: { url }, retry: { max_attempts: 1 } }],
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  const eventId = `evt_${name}`;
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: `${name}.go`,
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    },
  });
  expect(posted.statusCode, posted.body).toBe(202);
  const workflowId = eventRunWorkflowId(created.json().id as string, eventId);
  await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
  const run = (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runIdFor(workflowId)}` })).json();
  return { run, workflowId };
}

describe('http task network failures name their cause', () => {
  test('a host that does not resolve fails the task with ENOTFOUND in its error and in the worker log', async () => {
    const { run } = await runHttpTask('unresolvable', 'http://nonexistent.invalid/hook');
    expect(run.status).toBe('failed');
    expect(run.tasks[0]).toMatchObject({
      status: 'failed',
      error: { type: 'http_network_error', message: expect.stringContaining('ENOTFOUND') },
    });
    expect(run.error.message).toContain('ENOTFOUND');
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        obj: expect.objectContaining({ code: 'ENOTFOUND', url: 'http://nonexistent.invalid/hook' }),
      }),
    );
  });

  test('a closed loopback port fails the task with ECONNREFUSED in its error and in the worker log', async () => {
    const port = await closedPort();
    const { run } = await runHttpTask('refused', `http://127.0.0.1:${port}/hook`);
    expect(run.status).toBe('failed');
    expect(run.tasks[0]).toMatchObject({
      status: 'failed',
      error: { type: 'http_network_error', message: expect.stringContaining('ECONNREFUSED') },
    });
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 'warn', obj: expect.objectContaining({ code: 'ECONNREFUSED' }) }),
    );
  });
});
