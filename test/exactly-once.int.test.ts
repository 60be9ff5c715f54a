import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { startStack, waitFor, type TestStack } from './harness';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

async function register(body: object): Promise<{ id: string }> {
  const response = await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

const event = (event_id: string, data: object = { n: 1 }) => ({
  event_id,
  event_type: 'dup.test',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

async function countExecutions(workflowId: string): Promise<number> {
  let count = 0;
  for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) count++;
  return count;
}

describe('exactly one run per trigger', () => {
  test('the same event posted 20 times concurrently starts one workflow, one run row and one row per task', async () => {
    const activity = await register({
      name: 'dup-concurrent',
      triggers: [{ type: 'event', event_type: 'dup.test' }],
      tasks: [{ type: 'noop' }, { type: 'delay', config: { duration: '100ms' } }, { type: 'noop' }],
    });
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        stack.api.server.inject({ method: 'POST', url: '/v1/events', payload: event('evt_burst') }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(20).fill(202));
    const bodies = responses.map((r) => r.json());
    expect(bodies.filter((b) => b.status === 'accepted')).toHaveLength(1);
    expect(bodies.filter((b) => b.status === 'duplicate')).toHaveLength(19);
    const runStatuses = bodies.map((b) => b.runs[0].status).sort();
    expect(runStatuses.filter((s: string) => s === 'started')).toHaveLength(1);
    expect(runStatuses.filter((s: string) => s === 'duplicate')).toHaveLength(19);

    const workflowId = eventRunWorkflowId(activity.id, 'evt_burst');
    await stack.client.workflow.getHandle(workflowId).result();
    await waitFor('the execution to be visible', async () =>
      (await countExecutions(workflowId)) >= 1 ? true : undefined,
    );
    expect(await countExecutions(workflowId)).toBe(1);

    const runId = runIdFor(workflowId);
    const runs = await stack.sql.query('SELECT run_id, status FROM activity_runs WHERE activity_id = $1', [
      activity.id,
    ]);
    expect(runs.rows).toEqual([{ run_id: runId, status: 'succeeded' }]);
    const tasks = await stack.sql.query(
      'SELECT task_index, status FROM task_instances WHERE run_id = $1 ORDER BY task_index',
      [runId],
    );
    expect(tasks.rows).toEqual([
      { task_index: 0, status: 'succeeded' },
      { task_index: 1, status: 'succeeded' },
      { task_index: 2, status: 'succeeded' },
    ]);
    const stored = await stack.sql.query('SELECT count(*)::int AS n FROM events WHERE event_id = $1', ['evt_burst']);
    expect(stored.rows[0].n).toBe(1);
  });

  test('a redelivery after the run finished answers duplicate and starts nothing', async () => {
    const activity = await register({
      name: 'dup-later',
      triggers: [{ type: 'event', event_type: 'dup.later' }],
      tasks: [{ type: 'noop' }],
    });
    const first = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_later'), event_type: 'dup.later' },
    });
    expect(first.json().runs[0].status).toBe('started');
    const workflowId = eventRunWorkflowId(activity.id, 'evt_later');
    const handle = stack.client.workflow.getHandle(workflowId);
    await handle.result();
    const execution = (await handle.describe()).runId;

    const again = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_later'), event_type: 'dup.later' },
    });
    expect(again.statusCode).toBe(202);
    expect(again.json()).toMatchObject({
      status: 'duplicate',
      runs: [{ workflow_id: workflowId, status: 'duplicate' }],
    });
    // describe() reads the latest execution of the id directly (visibility lags): still the first one.
    expect((await handle.describe()).runId).toBe(execution);
  });

  test('a redelivery does not start runs for activities registered after the first delivery', async () => {
    await register({
      name: 'dup-before',
      triggers: [{ type: 'event', event_type: 'dup.late-reg' }],
      tasks: [{ type: 'noop' }],
    });
    const first = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_late_reg'), event_type: 'dup.late-reg' },
    });
    expect(first.json().runs).toHaveLength(1);
    await register({
      name: 'dup-after',
      triggers: [{ type: 'event', event_type: 'dup.late-reg' }],
      tasks: [{ type: 'noop' }],
    });
    const again = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_late_reg'), event_type: 'dup.late-reg' },
    });
    expect(again.json().runs).toHaveLength(1);
    expect(again.json().runs[0].activity_name).toBe('dup-before');
  });

  test('a route whose run is already recorded in Postgres is a duplicate even if Temporal has forgotten the run', async () => {
    const activity = await register({
      name: 'dup-recorded',
      triggers: [{ type: 'event', event_type: 'dup.recorded' }],
      tasks: [{ type: 'noop' }],
    });
    const workflowId = eventRunWorkflowId(activity.id, 'evt_recorded');
    // As if Temporal's retention had dropped a run that ran long ago: the row is all that is left.
    await stack.sql.query(
      `INSERT INTO activity_runs (run_id, workflow_id, activity_id, activity_version, trigger_type, event_id, status)
       VALUES ($1, $2, $3, 1, 'event', 'evt_recorded', 'succeeded')`,
      [runIdFor(workflowId), workflowId, activity.id],
    );
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_recorded'), event_type: 'dup.recorded' },
    });
    expect(response.json()).toMatchObject({
      status: 'accepted',
      runs: [{ workflow_id: workflowId, status: 'duplicate' }],
    });
    expect(await countExecutions(workflowId)).toBe(0);
  });

  test('the same event id with a different payload is refused with 422 and routes nothing', async () => {
    await register({
      name: 'dup-reuse',
      triggers: [{ type: 'event', event_type: 'dup.reuse' }],
      tasks: [{ type: 'noop' }],
    });
    const first = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_reuse', { amount: 1 }), event_type: 'dup.reuse' },
    });
    expect(first.statusCode).toBe(202);
    const reused = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_reuse', { amount: 2 }), event_type: 'dup.reuse' },
    });
    expect(reused.statusCode).toBe(422);
    expect(reused.headers['content-type']).toContain('application/problem+json');
    expect(reused.json()).toMatchObject({ status: 422, type: 'urn:activity-core:problem:event-id-reused' });
    expect(reused.json().detail).toContain('evt_reuse');
    const stored = await stack.sql.query('SELECT payload FROM events WHERE event_id = $1', ['evt_reuse']);
    expect(stored.rows[0].payload.data).toEqual({ amount: 1 });
  });

  test('the same content with keys in another order is the same event', async () => {
    await register({
      name: 'dup-order',
      triggers: [{ type: 'event', event_type: 'dup.order' }],
      tasks: [{ type: 'noop' }],
    });
    const first = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_order', { a: 1, b: { c: 2, d: 3 } }), event_type: 'dup.order' },
    });
    expect(first.json().status).toBe('accepted');
    const reordered = {
      data: { b: { d: 3, c: 2 }, a: 1 },
      occurred_at: '2026-03-01T09:00:00Z',
      source: 'tests',
      event_type: 'dup.order',
      event_id: 'evt_order',
    };
    const again = await stack.api.server.inject({ method: 'POST', url: '/v1/events', payload: reordered });
    expect(again.statusCode).toBe(202);
    expect(again.json().status).toBe('duplicate');
  });

  test('an event without an id takes the Idempotency-Key header as its id', async () => {
    const activity = await register({
      name: 'dup-key',
      triggers: [{ type: 'event', event_type: 'dup.key' }],
      tasks: [{ type: 'noop' }],
    });
    const { event_id: _omit, ...withoutId } = { ...event('x'), event_type: 'dup.key' };
    const first = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: withoutId,
      headers: { 'idempotency-key': 'key-123' },
    });
    expect(first.json()).toMatchObject({
      event_id: 'key-123',
      event_id_assigned: false,
      runs: [{ workflow_id: eventRunWorkflowId(activity.id, 'key-123'), status: 'started' }],
    });
    const again = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: withoutId,
      headers: { 'idempotency-key': 'key-123' },
    });
    expect(again.json().status).toBe('duplicate');
  });

  test('an event with no id at all is assigned one and the response says so', async () => {
    const { event_id: _omit, ...withoutId } = { ...event('x'), event_type: 'dup.none' };
    const response = await stack.api.server.inject({ method: 'POST', url: '/v1/events', payload: withoutId });
    expect(response.statusCode).toBe(202);
    expect(response.json().event_id_assigned).toBe(true);
    expect(response.json().event_id).toMatch(/^evt_[0-9a-f-]{36}$/);
    const stored = await stack.sql.query('SELECT id_origin FROM events WHERE event_id = $1', [
      response.json().event_id,
    ]);
    expect(stored.rows).toEqual([{ id_origin: 'assigned' }]);
  });

  test('a CloudEvent is mapped onto the envelope and routed like one', async () => {
    const activity = await register({
      name: 'dup-ce',
      triggers: [{ type: 'event', event_type: 'com.example.ce', source: '/shop' }],
      tasks: [{ type: 'noop' }],
    });
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        specversion: '1.0',
        id: 'ce-1',
        type: 'com.example.ce',
        source: '/shop',
        time: '2026-03-01T09:00:00Z',
        data: { x: 1 },
      },
    });
    expect(response.statusCode).toBe(202);
    expect(response.json().runs).toEqual([
      expect.objectContaining({ workflow_id: eventRunWorkflowId(activity.id, 'ce-1'), status: 'started' }),
    ]);
  });

  test('the decision log answers which activities an event matched and what happened', async () => {
    const activity = await register({
      name: 'dup-log',
      triggers: [{ type: 'event', event_type: 'dup.log' }],
      tasks: [{ type: 'noop' }],
    });
    await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...event('evt_log'), event_type: 'dup.log' },
    });
    const response = await stack.api.server.inject({ method: 'GET', url: '/v1/events/evt_log' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      event_id: 'evt_log',
      id_origin: 'body',
      routing_state: 'routed',
      routes: [{ activity_id: activity.id, activity_name: 'dup-log', activity_version: 1, outcome: 'started' }],
    });
    const missing = await stack.api.server.inject({ method: 'GET', url: '/v1/events/evt_never' });
    expect(missing.statusCode).toBe(404);
  });
});
