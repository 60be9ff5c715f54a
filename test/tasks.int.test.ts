import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, httpTaskAttemptId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { recordGoldenHistory } from './golden-histories';
import { startHttpTarget } from './http-target';
import { startStack, workflowBundle, type TestStack } from './harness';

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let failuresLeft = new Map<string, number>();

beforeAll(async () => {
  [stack, target] = await Promise.all([
    startStack(),
    startHttpTarget((request) => {
      const left = failuresLeft.get(request.url) ?? 0;
      if (left > 0) {
        failuresLeft.set(request.url, left - 1);
        return { status: 503, body: { error: 'try later' } };
      }
      if (request.url.startsWith('/gone')) return { status: 404, body: { error: 'no such thing' } };
      if (request.url.startsWith('/moved')) return { status: 302, body: {} };
      return { status: 200, body: { ok: true, url: request.url } };
    }),
  ]);
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

async function registerAndFire(
  name: string,
  tasks: object[],
  extra: object = {},
): Promise<{ activityId: string; workflowId: string; runId: string }> {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: { name, triggers: [{ type: 'event', event_type: `${name}.go` }], tasks, ...extra },
  });
  expect(created.statusCode, created.body).toBe(201);
  const activityId = created.json().id as string;
  const eventId = `evt_${name}`;
  await stack.api.server.inject({
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
  const workflowId = eventRunWorkflowId(activityId, eventId);
  return { activityId, workflowId, runId: runIdFor(workflowId) };
}

async function getRun(runId: string) {
  const response = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` });
  return response.json();
}

describe('tasks', () => {
  test('an http task whose target fails twice succeeds on retry, and every attempt carries the same Idempotency-Key', async () => {
    failuresLeft = new Map([['/flaky', 2]]);
    const { workflowId, runId } = await registerAndFire('flaky', [
      {
        type: 'http',
        config: { url: `${target.url}/flaky` },
        retry: { max_attempts: 5, initial_interval: '100ms', backoff_coefficient: 1 },
      },
    ]);
    await stack.client.workflow.getHandle(workflowId).result();

    const calls = target.requests.filter((r) => r.url === '/flaky');
    expect(calls).toHaveLength(3);
    const keys = new Set(calls.map((c) => c.headers['idempotency-key']));
    expect([...keys]).toEqual([taskWorkflowId(runId, 'http', 0)]);
    expect(calls.map((c) => c.headers['x-activity-attempt-id'])).toEqual(
      [1, 2, 3].map((n) => httpTaskAttemptId(taskWorkflowId(runId, 'http', 0), n)),
    );
    expect(calls.every((c) => c.headers['x-activity-run-id'] === runId)).toBe(true);

    const run = await getRun(runId);
    expect(run.status).toBe('succeeded');
    expect(run.tasks[0]).toMatchObject({ status: 'succeeded', attempt_count: 3 });
  });

  test('an http task answered with a 4xx fails at once and fails the run with the reason', async () => {
    const { workflowId, runId } = await registerAndFire('gone', [
      { type: 'http', config: { url: `${target.url}/gone` }, retry: { max_attempts: 5, initial_interval: '100ms' } },
      { type: 'noop' },
    ]);
    await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
    expect(target.requests.filter((r) => r.url === '/gone')).toHaveLength(1);
    const run = await getRun(runId);
    expect(run.status).toBe('failed');
    expect(run.error.message).toContain('task 0 (http) failed');
    expect(run.error.message).toContain('404');
    expect(run.tasks).toHaveLength(1);
    expect(run.tasks[0]).toMatchObject({ status: 'failed', attempt_count: 1, error: { type: 'http_status_404' } });
  });

  test('a redirect is neither followed nor retried', async () => {
    const { workflowId, runId } = await registerAndFire('moved', [
      { type: 'http', config: { url: `${target.url}/moved` }, retry: { max_attempts: 5, initial_interval: '100ms' } },
    ]);
    await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
    expect(target.requests.filter((r) => r.url === '/moved')).toHaveLength(1);
    expect((await getRun(runId)).tasks[0]).toMatchObject({ status: 'failed', error: { type: 'http_status_302' } });
  });

  test('a task marked continue_on_failure records its failure and the run goes on', async () => {
    const { workflowId, runId } = await registerAndFire('tolerant', [
      { type: 'http', config: { url: `${target.url}/gone/again` }, continue_on_failure: true },
      { type: 'noop' },
    ]);
    await stack.client.workflow.getHandle(workflowId).result();
    const run = await getRun(runId);
    expect(run.status).toBe('succeeded');
    expect(run.tasks.map((t: { status: string }) => t.status)).toEqual(['failed', 'succeeded']);
  });

  test('success statuses from the definition decide what counts as success', async () => {
    const { workflowId, runId } = await registerAndFire('accept-404', [
      { type: 'http', config: { url: `${target.url}/gone/ok`, success_statuses: [404] } },
    ]);
    await stack.client.workflow.getHandle(workflowId).result();
    expect((await getRun(runId)).tasks[0]).toMatchObject({ status: 'succeeded', result: { status: 404 } });
  });

  test('a cancelled run records cancelled for itself and for the task in flight', async () => {
    const { workflowId, runId } = await registerAndFire('cancel-me', [{ type: 'delay', config: { duration: '1h' } }]);
    await expect.poll(async () => (await getRun(runId)).tasks?.[0]?.status, { timeout: 15_000 }).toBe('running');
    const cancel = await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
    expect(cancel.statusCode).toBe(202);
    expect(cancel.json()).toEqual({ run_id: runId, cancel_requested: true });
    await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
    await expect.poll(async () => (await getRun(runId)).status, { timeout: 15_000 }).toBe('cancelled');
    expect((await getRun(runId)).tasks[0].status).toBe('cancelled');
  });

  test('an emit_event task emits an event with an id derived from the run, which routes like any other', async () => {
    const follower = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: { name: 'follower', triggers: [{ type: 'event', event_type: 'chain.next' }], tasks: [{ type: 'noop' }] },
    });
    const { workflowId, runId } = await registerAndFire('leader', [
      { type: 'emit_event', config: { event_type: 'chain.next', data: { from: '{{run.run_id}}' } } },
    ]);
    await stack.client.workflow.getHandle(workflowId).result();
    const emittedId = `emit-${runId}:0`;
    const followerWorkflowId = eventRunWorkflowId(follower.json().id, emittedId);
    await stack.client.workflow.getHandle(followerWorkflowId).result();
    const stored = await stack.sql.query('SELECT id_origin, payload FROM events WHERE event_id = $1', [emittedId]);
    expect(stored.rows[0]).toMatchObject({
      id_origin: 'emitted',
      payload: { data: { from: runId }, source: 'activity-core' },
    });
  });

  test('replaying a completed run history with the worker replayer finds no nondeterminism', async () => {
    const { workflowId } = await registerAndFire('replay', [
      { type: 'noop' },
      { type: 'delay', config: { duration: '50ms' } },
      { type: 'http', config: { url: `${target.url}/replay` } },
      { type: 'emit_event', config: { event_type: 'replay.done' } },
    ]);
    const handle = stack.client.workflow.getHandle(workflowId);
    await handle.result();
    const history = await handle.fetchHistory();
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, workflowId),
    ).resolves.toBeUndefined();
    const { runId } = { runId: runIdFor(workflowId) };
    const child = stack.client.workflow.getHandle(taskWorkflowId(runId, 'http', 2));
    const childHistory = await child.fetchHistory();
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, childHistory, child.workflowId),
    ).resolves.toBeUndefined();
    // Adds golden histories of today's shape beside the older ones (see recordGoldenHistory).
    await recordGoldenHistory('run-activity-workflow', history, workflowId);
    await recordGoldenHistory('task-workflow-http', childHistory, child.workflowId);
  });
});
