import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';

let stack: TestStack;

beforeAll(async () => {
  // A short limit keeps the chain short; the mechanism is the same at the default 8.
  stack = await startStack({ env: { EMIT_MAX_HOPS: '2' } });
});
afterAll(async () => {
  await stack?.close();
});

const selfEmitting = (name: string, extra: object = {}) => ({
  name,
  triggers: [{ type: 'event', event_type: `${name}.tick` }],
  tasks: [
    { type: 'noop' },
    { type: 'emit_event', config: { event_type: `${name}.tick`, data: { from: '{{run.run_id}}' } } },
  ],
  ...extra,
});

describe('emit_event chains', () => {
  test('a definition whose emit_event task emits its own trigger type is refused, naming the task', async () => {
    const refused = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: selfEmitting('hops-refused'),
    });
    expect(refused.statusCode, refused.body).toBe(400);
    const problem = refused.json();
    expect(problem.errors).toEqual([
      expect.objectContaining({
        path: 'tasks[1].config.event_type',
        message: expect.stringContaining('allow_self_trigger'),
      }),
    ]);
  });

  test('a self-triggering activity stops after EMIT_MAX_HOPS emits and the last task record says why', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: selfEmitting('hops-loop', { allow_self_trigger: true }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const activityId = created.json().id as string;
    const posted = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'hops-origin',
        event_type: 'hops-loop.tick',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    expect(posted.statusCode, posted.body).toBe(202);

    // Hop 0 (posted) → run 1 emits hop 1 → run 2 emits hop 2 → run 3's emit (hop 3) is refused.
    const run1 = runIdFor(eventRunWorkflowId(activityId, 'hops-origin'));
    const hop1 = `emit-${run1}:1`;
    const run2 = runIdFor(eventRunWorkflowId(activityId, hop1));
    const hop2 = `emit-${run2}:1`;
    const run3 = runIdFor(eventRunWorkflowId(activityId, hop2));
    await expect
      .poll(async () => (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${run3}` })).json().status, {
        timeout: 60_000,
        interval: 250,
      })
      .toBe('failed');
    const last = (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${run3}` })).json();
    expect(last.tasks[1]).toMatchObject({ task_type: 'emit_event', status: 'failed' });
    expect(last.tasks[1].error.message).toContain('EMIT_MAX_HOPS is 2');
    expect(last.tasks[1].error.type).toBe('emit_hops_exceeded');

    // Nothing ran past the limit: three runs, three events, hops counted on each.
    const runs = await stack.sql.query('SELECT run_id FROM activity_runs WHERE activity_id = $1', [activityId]);
    expect(runs.rows.map((row: { run_id: string }) => row.run_id).sort()).toEqual([run1, run2, run3].sort());
    const events = await stack.sql.query(
      "SELECT event_id, hops, credential FROM events WHERE event_type = 'hops-loop.tick' ORDER BY hops",
    );
    expect(events.rows).toEqual([
      { event_id: 'hops-origin', hops: 0, credential: 'anonymous' },
      { event_id: hop1, hops: 1, credential: `emit:${run1}` },
      { event_id: hop2, hops: 2, credential: `emit:${run2}` },
    ]);
    const shown = (
      await stack.api.server.inject({ method: 'GET', url: `/v1/events/${encodeURIComponent(hop2)}` })
    ).json();
    expect(shown).toMatchObject({ hops: 2, credential: `emit:${run2}` });
  });

  test('an event routed later by the dispatcher passes its hop count on to what its run emits', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'hops-dispatch',
        triggers: [{ type: 'event', event_type: 'hops-dispatch.tick' }],
        tasks: [{ type: 'emit_event', config: { event_type: 'hops-dispatch.next' } }],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const activityId = created.json().id as string;
    // As a process that died between accepting an emitted event (hop 1) and starting its run leaves it: pending, for the dispatcher.
    const envelope = {
      event_id: 'hops-pending',
      event_type: 'hops-dispatch.tick',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    };
    const workflowId = eventRunWorkflowId(activityId, 'hops-pending');
    await stack.sql.query(
      `INSERT INTO events (event_id, source, event_type, occurred_at, payload, fingerprint, id_origin, credential, hops, routing_state, next_attempt_at)
       VALUES ($1, 'tests', 'hops-dispatch.tick', '2026-03-01T09:00:00Z', $2, 'sha256:test', 'body', 'emit:test', 1, 'pending', now())`,
      [envelope.event_id, JSON.stringify(envelope)],
    );
    await stack.sql.query(
      `INSERT INTO event_routes (event_id, activity_id, activity_version, activity_name, workflow_id, run_id, outcome) VALUES ($1, $2, 1, 'hops-dispatch', $3, $4, 'pending')`,
      [envelope.event_id, activityId, workflowId, runIdFor(workflowId)],
    );
    const emitted = `emit-${runIdFor(workflowId)}:0`;
    await expect
      .poll(
        async () => (await stack.sql.query('SELECT hops FROM events WHERE event_id = $1', [emitted])).rows[0]?.hops,
        { timeout: 60_000, interval: 250 },
      )
      .toBe(2);
    await expect
      .poll(
        async () =>
          (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runIdFor(workflowId)}` })).json().status,
        { timeout: 60_000, interval: 250 },
      )
      .toBe('succeeded');
  });
});
