import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { startHttpTarget } from './http-target';
import { startStack, waitFor, type TestStack } from './harness';

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  [stack, target] = await Promise.all([startStack(), startHttpTarget()]);
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

async function register(body: object): Promise<{ id: string; version: number }> {
  const response = await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

const envelope = (event_id: string, event_type = 'order.paid') => ({
  event_id,
  event_type,
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { order_id: 'o-42', amount: 150 },
});

describe('the core path', () => {
  test('an event starts exactly one run whose tasks are recorded in Postgres and visible over the API', async () => {
    const activity = await register({
      name: 'order-paid-sync',
      triggers: [{ type: 'event', event_type: 'order.paid' }],
      tasks: [
        {
          type: 'http',
          config: { url: `${target.url}/orders/{{event.data.order_id}}`, body: { amount: '{{event.data.amount}}' } },
        },
        { type: 'noop' },
      ],
    });
    expect(activity.version).toBe(1);

    const posted = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: envelope('evt_core_1'),
    });
    expect(posted.statusCode).toBe(202);
    const workflowId = eventRunWorkflowId(activity.id, 'evt_core_1');
    const runId = runIdFor(workflowId);
    expect(posted.json()).toEqual({
      event_id: 'evt_core_1',
      event_id_assigned: false,
      status: 'accepted',
      runs: [
        {
          activity_id: activity.id,
          activity_name: 'order-paid-sync',
          workflow_id: workflowId,
          run_id: runId,
          status: 'started',
        },
      ],
      filtered: [],
    });

    await stack.client.workflow.getHandle(workflowId).result();

    const run = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` });
    expect(run.statusCode).toBe(200);
    const body = run.json();
    expect(body).toMatchObject({
      run_id: runId,
      workflow_id: workflowId,
      activity_id: activity.id,
      activity_version: 1,
      trigger_type: 'event',
      event_id: 'evt_core_1',
      status: 'succeeded',
      error: null,
    });
    expect(body.finished_at).not.toBeNull();
    expect(body.tasks).toHaveLength(2);
    expect(
      body.tasks.map((t: { workflow_id: string; status: string; task_type: string }) => [
        t.workflow_id,
        t.task_type,
        t.status,
      ]),
    ).toEqual([
      [taskWorkflowId(runId, 'http', 0), 'http', 'succeeded'],
      [taskWorkflowId(runId, 'noop', 1), 'noop', 'succeeded'],
    ]);
    expect(body.tasks[0].attempt_count).toBe(1);
    expect(body.tasks[0].result).toEqual({ status: 200, body: { ok: true } });

    // The http task rendered its templates from the event.
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]?.url).toBe('/orders/o-42');
    expect(JSON.parse(target.requests[0]?.body ?? '{}')).toEqual({ amount: 150 });
    expect(target.requests[0]?.headers['idempotency-key']).toBe(taskWorkflowId(runId, 'http', 0));

    const listed = await stack.api.server.inject({ method: 'GET', url: `/v1/runs?activity_id=${activity.id}` });
    expect(listed.json().items.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
  });

  test('a run carries the search attributes and a summary operators filter on in the Temporal UI', async () => {
    const activity = await register({
      name: 'search-attrs',
      triggers: [{ type: 'event', event_type: 'sa.*' }],
      tasks: [{ type: 'noop' }],
    });
    await stack.api.server.inject({ method: 'POST', url: '/v1/events', payload: envelope('evt_sa_1', 'sa.created') });
    const workflowId = eventRunWorkflowId(activity.id, 'evt_sa_1');
    const handle = stack.client.workflow.getHandle(workflowId);
    await handle.result();
    const description = await handle.describe();
    expect(description.searchAttributes).toMatchObject({
      ActivityId: [activity.id],
      ActivityName: ['search-attrs'],
      TriggerType: ['event'],
      EventId: ['evt_sa_1'],
    });
    expect(await description.staticSummary()).toBe('search-attrs · event sa.created (evt_sa_1)');

    const found = await waitFor('visibility to index the run', async () => {
      const ids: string[] = [];
      for await (const wf of stack.client.workflow.list({
        query: `ActivityId = "${activity.id}" AND WorkflowType = "RunActivityWorkflow"`,
      }))
        ids.push(wf.workflowId);
      return ids.length > 0 ? ids : undefined;
    });
    expect(found).toEqual([workflowId]);
  });

  test('an event matching two activities starts two runs and one matching none is stored with no runs', async () => {
    const a = await register({
      name: 'two-a',
      triggers: [{ type: 'event', event_type: 'two.happened' }],
      tasks: [{ type: 'noop' }],
    });
    const b = await register({
      name: 'two-b',
      triggers: [{ type: 'event', event_type: 'two.*', source: 'shop' }],
      tasks: [{ type: 'noop' }],
    });
    await register({
      name: 'two-other-source',
      triggers: [{ type: 'event', event_type: 'two.*', source: 'elsewhere' }],
      tasks: [{ type: 'noop' }],
    });

    const both = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: envelope('evt_two', 'two.happened'),
    });
    expect(both.statusCode).toBe(202);
    expect(
      both
        .json()
        .runs.map((r: { activity_id: string; status: string }) => [r.activity_id, r.status])
        .sort(),
    ).toEqual(
      [
        [a.id, 'started'],
        [b.id, 'started'],
      ].sort(),
    );

    const none = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: envelope('evt_none', 'nobody.cares'),
    });
    expect(none.statusCode).toBe(202);
    expect(none.json()).toMatchObject({ event_id: 'evt_none', status: 'accepted', runs: [] });
    const stored = await stack.sql.query('SELECT event_id, routing_state FROM events WHERE event_id = $1', [
      'evt_none',
    ]);
    expect(stored.rows).toEqual([{ event_id: 'evt_none', routing_state: 'routed' }]);
  });

  test('a disabled activity matches no events and a re-enabled one does', async () => {
    const activity = await register({
      name: 'toggle',
      triggers: [{ type: 'event', event_type: 'toggle.x' }],
      tasks: [{ type: 'noop' }],
    });
    const disabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` });
    expect(disabled.json()).toMatchObject({ enabled: false, version: 2 });
    const first = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: envelope('evt_toggle_1', 'toggle.x'),
    });
    expect(first.json().runs).toEqual([]);
    await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/enable` });
    const second = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: envelope('evt_toggle_2', 'toggle.x'),
    });
    expect(second.json().runs).toHaveLength(1);
    expect(second.json().runs[0].status).toBe('started');
  });
});
