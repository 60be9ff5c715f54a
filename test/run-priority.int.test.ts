import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';

/**
 * Priority on the record (docs/pacing.md): every run records the Temporal
 * priority it was started with, and re-run, bulk re-run and backfill requests
 * may name one in place of the default (one lower than the definition's).
 * Read back from the run records and from Temporal's own description of the
 * workflow.
 */
let stack: TestStack;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  connection = await Connection.connect({ address: stack.config.temporal.address });
  client = new Client({ connection, namespace: stack.config.temporal.namespace });
}, 120_000);

afterAll(async () => {
  await connection?.close();
  await stack?.close();
}, 60_000);

async function api(method: 'GET' | 'POST', url: string, payload?: unknown, headers: Record<string, string> = {}) {
  const response = await stack.api.server.inject({
    method,
    url,
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: response.statusCode, json: response.json(), body: response.body };
}

async function register(payload: Record<string, unknown>): Promise<string> {
  const created = await api('POST', '/v1/activities', payload);
  expect(created.status, created.body).toBe(201);
  return created.json.id as string;
}

interface RunView {
  run_id: string;
  workflow_id: string;
  status: string;
  priority: number | null;
  fairness_key: string | null;
  not_before: string | null;
  trigger_type: string;
}

async function finishedRun(runId: string): Promise<RunView> {
  return await waitFor(
    `run ${runId} to finish`,
    async () => {
      const run = await api('GET', `/v1/runs/${runId}`);
      return run.status === 200 && run.json.status === 'succeeded' ? (run.json as RunView) : undefined;
    },
    120_000,
  );
}

async function postEvent(eventType: string, eventId: string): Promise<string> {
  const posted = await api('POST', '/v1/events', {
    event_id: eventId,
    event_type: eventType,
    source: 'tests',
    occurred_at: '2026-03-01T09:00:00Z',
  });
  expect(posted.status, posted.body).toBe(202);
  return posted.json.runs[0].run_id as string;
}

async function temporalPriority(workflowId: string): Promise<number | undefined> {
  return (await client.workflow.getHandle(workflowId).describe()).priority?.priorityKey;
}

function refusedPaths(response: { status: number; json: { errors?: Array<{ path: string }> } }): string[] {
  expect(response.status).toBe(400);
  return (response.json.errors ?? []).map((error) => error.path);
}

describe('priority on the run record', () => {
  test("an event run records its definition's priority, in the run record and in the run list", async () => {
    const activityId = await register({
      name: 'recorded-priority',
      triggers: [{ type: 'event', event_type: 'recorded.priority' }],
      tasks: [{ type: 'noop' }],
      priority: 2,
    });
    const runId = await postEvent('recorded.priority', 'recorded-1');
    const run = await finishedRun(runId);
    expect(run.priority).toBe(2);
    expect(run.fairness_key).toBe(activityId);
    expect(await temporalPriority(run.workflow_id)).toBe(2);
    const listed = await api('GET', `/v1/runs?activity_id=${activityId}`);
    expect(listed.json.items.map((item: RunView) => item.priority)).toEqual([2]);

    // An activity without a priority: Temporal's default 3, recorded as such.
    await register({
      name: 'default-priority',
      triggers: [{ type: 'event', event_type: 'default.priority' }],
      tasks: [{ type: 'noop' }],
    });
    expect((await finishedRun(await postEvent('default.priority', 'default-1'))).priority).toBe(3);
  });

  test("a run started by a run_activity task records its caller's priority and fairness key, which it inherits", async () => {
    const calleeId = await register({ name: 'callee', tasks: [{ type: 'noop' }], priority: 5 });
    const callerId = await register({
      name: 'caller',
      triggers: [{ type: 'event', event_type: 'caller.called' }],
      tasks: [{ type: 'run_activity', config: { activity: 'callee' } }],
      priority: 1,
    });
    const caller = await finishedRun(await postEvent('caller.called', 'caller-1'));
    expect(caller).toMatchObject({ priority: 1, fairness_key: callerId });
    const called = await waitFor('the called run', async () => {
      const listed = await api('GET', `/v1/runs?activity_id=${calleeId}`);
      return (listed.json.items as RunView[])[0];
    });
    expect((await finishedRun(called.run_id)).trigger_type).toBe('call');
    expect(await api('GET', `/v1/runs/${called.run_id}`)).toMatchObject({
      json: { priority: 1, fairness_key: callerId },
    });
  });

  test('a run that waited for a concurrency slot records its priority from the moment it waits', async () => {
    await register({
      name: 'slot-priority',
      triggers: [{ type: 'event', event_type: 'slot.priority' }],
      tasks: [{ type: 'noop' }],
      concurrency: { limit: 1 },
      priority: 4,
    });
    const runIds = [await postEvent('slot.priority', 'slot-1'), await postEvent('slot.priority', 'slot-2')];
    for (const runId of runIds) expect((await finishedRun(runId)).priority).toBe(4);
  });

  test("a run its throttle delayed shows, on its record, the not_before its event's route holds; other runs and its re-run show null", async () => {
    const activityId = await register({
      name: 'throttled-record',
      triggers: [{ type: 'event', event_type: 'throttled.record' }],
      tasks: [{ type: 'noop' }],
      throttle: { limit: 1, period: '2s' },
    });
    const first = await postEvent('throttled.record', 'throttled-1');
    const second = await postEvent('throttled.record', 'throttled-2');
    const route = await api('GET', '/v1/events/throttled-2');
    const notBefore = route.json.routes[0].not_before as string;
    expect(notBefore).toEqual(expect.any(String));
    expect((await finishedRun(first)).not_before).toBeNull();
    expect((await finishedRun(second)).not_before).toBe(notBefore);
    const listed = await api('GET', `/v1/runs?activity_id=${activityId}`);
    expect(Object.fromEntries((listed.json.items as RunView[]).map((run) => [run.run_id, run.not_before]))).toEqual({
      [first]: null,
      [second]: notBefore,
    });

    const rerun = await api('POST', `/v1/runs/${second}/rerun`, {});
    expect(rerun.status, rerun.body).toBe(202);
    expect((await finishedRun(rerun.json.run_id)).not_before).toBeNull();
  });

  test('a re-run runs one lower than the definition unless its request names a priority, which is kept under its Idempotency-Key', async () => {
    await register({
      name: 'rerun-priority',
      triggers: [{ type: 'event', event_type: 'rerun.priority' }],
      tasks: [{ type: 'noop' }],
      priority: 2,
    });
    const original = await finishedRun(await postEvent('rerun.priority', 'rerun-1'));
    expect(original.priority).toBe(2);

    const byDefault = await api('POST', `/v1/runs/${original.run_id}/rerun`, {});
    expect(byDefault.status, byDefault.body).toBe(202);
    expect((await finishedRun(byDefault.json.run_id)).priority).toBe(3);

    const named = await api('POST', `/v1/runs/${original.run_id}/rerun`, { priority: 1 }, { 'idempotency-key': 'k-1' });
    expect(named.status, named.body).toBe(202);
    const rerun = await finishedRun(named.json.run_id);
    expect(rerun.priority).toBe(1);
    expect(await temporalPriority(rerun.workflow_id)).toBe(1);
    expect(await (await client.workflow.getHandle(rerun.workflow_id).describe()).staticSummary()).toContain(
      'priority 1',
    );

    // The same key names the same re-run: a different priority in the repeat changes nothing.
    const repeated = await api(
      'POST',
      `/v1/runs/${original.run_id}/rerun`,
      { priority: 5 },
      { 'idempotency-key': 'k-1' },
    );
    expect(repeated.status, repeated.body).toBe(202);
    expect(repeated.json).toMatchObject({ run_id: rerun.run_id, status: 'duplicate' });
    expect((await api('GET', `/v1/runs/${rerun.run_id}`)).json.priority).toBe(1);

    for (const priority of [0, 6, 2.5, 'high']) {
      const refused = await api('POST', `/v1/runs/${original.run_id}/rerun`, { priority });
      expect(refusedPaths(refused), JSON.stringify(priority)).toContain('priority');
    }
    // Nothing was started by the refused requests: the chain holds the two accepted re-runs.
    expect((await api('GET', `/v1/runs/${original.run_id}`)).json.reruns).toHaveLength(2);
  });

  test("a bulk re-run's priority is recorded on the bulk re-run and on every re-run it starts", async () => {
    const activityId = await register({
      name: 'bulk-priority',
      triggers: [{ type: 'event', event_type: 'bulk.priority' }],
      tasks: [{ type: 'noop' }],
    });
    const from = new Date(Date.now() - 60_000).toISOString();
    for (const id of ['bulk-1', 'bulk-2', 'bulk-3']) await finishedRun(await postEvent('bulk.priority', id));
    const to = new Date(Date.now() + 1_000).toISOString();
    const filter = { activity_id: activityId, status: 'succeeded', from, to };

    const refused = await api('POST', '/v1/runs/rerun', { filter, priority: 9 });
    expect(refusedPaths(refused)).toContain('priority');

    const accepted = await api('POST', '/v1/runs/rerun', { filter, priority: 1 });
    expect(accepted.status, accepted.body).toBe(202);
    expect(accepted.json).toMatchObject({ total: 3, priority: 1 });
    const reruns = await waitFor(
      'the three re-runs to finish',
      async () => {
        const listed = await api('GET', `/v1/runs?activity_id=${activityId}&status=succeeded`);
        const rows = (listed.json.items as RunView[]).filter((run) => run.workflow_id.startsWith('rerun-'));
        return rows.length === 3 ? rows : undefined;
      },
      120_000,
    );
    expect(reruns.map((run) => run.priority)).toEqual([1, 1, 1]);
    expect((await api('GET', `/v1/runs/rerun/${accepted.json.id}`)).json.priority).toBe(1);
  });

  test('a backfill runs one lower than the definition unless its request names a priority', async () => {
    const activityId = await register({
      name: 'backfill-priority',
      triggers: [{ type: 'cron', cron: '0 9 * * *' }],
      tasks: [{ type: 'noop' }],
      priority: 1,
    });
    const year = new Date().getUTCFullYear() - 1;
    const backfill = async (start: string, end: string, extra: Record<string, unknown> = {}) =>
      await api('POST', `/v1/activities/${activityId}/schedules/backfill`, { start, end, ...extra });

    const refused = await backfill(`${year}-01-01T00:00:00Z`, `${year}-01-02T23:00:00Z`, { priority: 0 });
    expect(refusedPaths(refused)).toContain('priority');

    const byDefault = await backfill(`${year}-01-01T00:00:00Z`, `${year}-01-02T23:00:00Z`);
    expect(byDefault.status, byDefault.body).toBe(200);
    expect(byDefault.json).toMatchObject({ started: 2 });
    const named = await backfill(`${year}-02-01T00:00:00Z`, `${year}-02-02T23:00:00Z`, { priority: 4 });
    expect(named.status, named.body).toBe(200);
    expect(named.json).toMatchObject({ started: 2 });

    const priorities = async (fires: Array<{ run_id: string }>) =>
      await Promise.all(fires.map(async (fire) => (await finishedRun(fire.run_id)).priority));
    expect(await priorities(byDefault.json.fires)).toEqual([2, 2]);
    expect(await priorities(named.json.fires)).toEqual([4, 4]);
    expect(await temporalPriority(named.json.fires[0].workflow_id)).toBe(4);
  });
});
